"""Recursor's stand-in for OpenEvolve's package name, holding only ``evaluation_result``
(see ``../README.md``): an OpenEvolve evaluator's ``from openevolve.evaluation_result import
EvaluationResult`` works in a Recursor campaign without OpenEvolve installed."""
