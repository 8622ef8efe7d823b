"""Chunking a tensor into k-value packets and reassembling it."""
import numpy as np
import pytest
from hypothesis import given, strategies as st

from workers.chunking import num_chunks, reassemble, split


@given(length=st.integers(0, 500), k=st.sampled_from([1, 32, 64]))
def test_split_then_reassemble_is_identity(length, k):
    x = np.arange(length, dtype=np.int32) - 7
    chunks = split(x, k)
    assert len(chunks) == num_chunks(length, k)
    assert all(len(v) == k for _, v in chunks)
    assert [o for o, _ in chunks] == [i * k for i in range(len(chunks))]
    out = reassemble(dict(chunks), length, k)
    assert out.dtype == np.int32
    np.testing.assert_array_equal(out, x)


def test_padding_is_zero():
    chunks = split(np.ones(33, dtype=np.int32), 32)
    assert len(chunks) == 2
    assert chunks[1][1][0] == 1 and not chunks[1][1][1:].any()


def test_missing_chunk_is_an_error_naming_it():
    chunks = dict(split(np.ones(100, dtype=np.int32), 32))
    del chunks[64]
    with pytest.raises(ValueError, match=r"missing offsets \[64\]"):
        reassemble(chunks, 100, 32)


def test_wrong_chunk_size_is_an_error():
    with pytest.raises(ValueError, match="expected"):
        reassemble({0: np.zeros(5, dtype=np.int32)}, 5, 32)


def test_floats_must_be_quantized_first():
    with pytest.raises(TypeError, match="quantize"):
        split(np.zeros(4, dtype=np.float32), 32)


def test_multidimensional_tensor_is_flattened():
    x = np.arange(70, dtype=np.int32).reshape(7, 10)
    np.testing.assert_array_equal(reassemble(dict(split(x, 32)), 70, 32), x.reshape(-1))
