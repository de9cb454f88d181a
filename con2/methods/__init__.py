"""Anomaly-detection methods as small registered classes (see ``registry``)."""

from con2.methods.base import Method, MethodScores
from con2.methods.registry import all_methods, build_method, get_method, register

__all__ = ["Method", "MethodScores", "all_methods", "build_method", "get_method", "register"]
