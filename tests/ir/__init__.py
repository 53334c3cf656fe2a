"""Tests of the IR: printer/parser round trips and shared hypothesis strategies."""
