"""Tests for acrobat; the layout mirrors the package."""
