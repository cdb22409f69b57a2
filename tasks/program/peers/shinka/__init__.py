"""Recursor's stand-in for ShinkaEvolve's package name, holding only ``shinka.core``'s
``run_shinka_eval`` (see ``../README.md``)."""
