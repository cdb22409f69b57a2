"""Data files (package data), not code: a package so that setuptools installs them as such."""
