"""Helpers the tests share (no test file imports another test file)."""
