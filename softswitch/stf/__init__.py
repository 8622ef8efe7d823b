"""Conformance runner for p4c's STF tests (python3 -m softswitch.stf).

grammar.py (STF text -> steps), entries.py (table entries -> CLI commands), compare.py (frames
against expectations), runner.py (one test on one target), target_softswitch.py and
target_bmv2.py (the targets), corpus.py (a folder of tests), expected.py (expected failures).
"""
