"""Model-size presets: the generated layer lists add up to the published parameter counts,
scale shrinks every layer, and a synthetic run carries the layers (scenario, workload)."""
import math
from pathlib import Path

import numpy as np
import pytest

from testbed.scenario import ScenarioError, dump_scenario, parse_scenario
from workers import presets
from workers.workload import Workload, WorkloadSpec, gradient_layers, parameter_count

QUICKSTART = (Path(__file__).resolve().parent.parent / "scenarios" / "quickstart.yaml").read_text()

# torchvision's num_params of each model's weights, and Hugging Face's BertModel
# (bert-base-uncased, pooler included); tensors: len(list(model.parameters())).
PUBLISHED = {"resnet50": (25_557_032, 161), "vgg16": (138_357_544, 32), "alexnet": (61_100_840, 16),
             "mobilenet_v2": (3_504_872, 158), "bert_base": (109_482_240, 199)}


@pytest.mark.parametrize("name", presets.NAMES)
def test_preset_totals_are_the_published_parameter_counts(name):
    total, n_tensors = PUBLISHED[name]
    t = presets.tensors(name)
    assert sum(math.prod(shape) for _, shape in t) == total == presets.size(name)
    assert len(t) == n_tensors and len({n for n, _ in t}) == n_tensors     # names unique


def test_layer_shapes_follow_the_architectures():
    r = dict(presets.tensors("resnet50"))
    assert r["conv1.weight"] == (64, 3, 7, 7) and r["fc.weight"] == (1000, 2048)
    assert r["layer3.0.downsample.0.weight"] == (1024, 512, 1, 1) and "layer3.1.downsample.0.weight" not in r
    assert r["layer4.2.conv2.weight"] == (512, 512, 3, 3)
    v = dict(presets.tensors("vgg16"))
    assert v["features.28.weight"] == (512, 512, 3, 3) and v["classifier.0.weight"] == (4096, 25088)
    a = dict(presets.tensors("alexnet"))
    assert a["features.0.weight"] == (64, 3, 11, 11) and a["classifier.1.weight"] == (4096, 9216)
    m = dict(presets.tensors("mobilenet_v2"))
    assert m["features.1.conv.0.0.weight"] == (32, 1, 3, 3)          # t = 1: depthwise first
    assert m["features.17.conv.1.0.weight"] == (960, 1, 3, 3)        # 160 x 6, depthwise
    assert m["features.18.0.weight"] == (1280, 320, 1, 1)
    b = dict(presets.tensors("bert_base"))
    assert b["embeddings.word_embeddings.weight"] == (30522, 768)
    assert b["encoder.layer.11.intermediate.dense.weight"] == (3072, 768)


def test_scale_shrinks_every_layer_proportionally_and_keeps_one_value():
    full, small = presets.layers("resnet50"), presets.layers("resnet50", 0.01)
    assert [n for n, _ in full] == [n for n, _ in small]
    for (_, big), (_, s) in zip(full, small):
        assert s == max(1, round(big * 0.01))
    assert presets.size("resnet50", 0.01) == sum(s for _, s in small) == 255_573
    with pytest.raises(ValueError, match=r"workload.scale: must be in \(0, 1\] \(got 0\)"):
        presets.layers("vgg16", 0.0)
    with pytest.raises(ValueError, match="workload.preset: unknown preset 'resnet18'"):
        presets.tensors("resnet18")


def test_synthetic_workload_carries_the_preset_layers():
    section = {"kind": "synthetic", "preset": "mobilenet_v2", "scale": 0.01}
    w = Workload(WorkloadSpec.from_scenario(section), seed=1, n_workers=3)
    assert w.layers == presets.layers("mobilenet_v2", 0.01) == gradient_layers(section)
    assert w.size == parameter_count(section) == 35_076
    g, _ = w.gradient(2, 5)
    assert g.shape == (w.size,) and np.abs(g).max() <= w.spec.clip
    # the first values still train the small model: accuracy is reported
    before = w.evaluate()
    for it in range(5):
        w.apply(w.reference_sum(it))
    assert w.evaluate() != before


def test_plain_synthetic_and_model_layers():
    assert gradient_layers({"kind": "synthetic", "parameters": 5000}) == [("gradient", 5000)]
    assert gradient_layers({"kind": "synthetic", "parameters": 10}) == [("gradient", 136)]   # the model's floor
    assert [n for n, _ in gradient_layers({"kind": "model", "name": "mlp"})] == \
        ["hidden.weight", "hidden.bias", "out.weight", "out.bias"]


def test_scenario_records_preset_scale_and_size_and_reads_back():
    scn = parse_scenario(QUICKSTART, "x.yaml", ["workload={kind: synthetic, preset: vgg16, scale: 0.001}"])
    wl = scn.workload
    assert (wl.preset, wl.scale, wl.parameters) == ("vgg16", 0.001, presets.size("vgg16", 0.001))
    text = dump_scenario(scn)
    assert "preset: vgg16" in text and "scale: 0.001" in text and f"parameters: {wl.parameters}" in text
    again = parse_scenario(text, "resolved.yaml")
    assert again.workload == wl
    plain = parse_scenario(QUICKSTART, "x.yaml", ["workload={kind: synthetic}"]).workload
    assert (plain.preset, plain.scale, plain.parameters) == (None, 1.0, 65536)


@pytest.mark.parametrize("ov,expected", [
    ("workload={kind: synthetic, preset: resnet50, parameters: 1000}",
     "workload.parameters: 1000 disagrees with preset resnet50 at scale 1 (25557032 values); "
     "drop parameters, the preset sets it"),
    ("workload={kind: synthetic, scale: 0.5}",
     "workload.scale: only applies to a preset's layers: set preset (known: resnet50, vgg16, "
     "alexnet, mobilenet_v2, bert_base) or drop scale"),
    ("workload={kind: synthetic, preset: alexnet, scale: 0.0000001}",
     "workload.scale: alexnet at scale 1e-07 has 20 values, fewer than the 136 of the model a "
     "synthetic run trains; raise scale"),
    ("workload={kind: synthetic, preset: resnet50, scale: 1.5}", "workload.scale: must be <= 1 (got 1.5)"),
    ("workload={kind: synthetic, preset: resnet18}",
     "workload.preset: unknown preset 'resnet18' (known: resnet50, vgg16, alexnet, mobilenet_v2, bert_base)"),
])
def test_preset_errors_name_the_field(ov, expected):
    with pytest.raises(ScenarioError) as ei:
        parse_scenario(QUICKSTART, "x.yaml", [ov])
    assert str(ei.value) == f"x.yaml: {expected}"
