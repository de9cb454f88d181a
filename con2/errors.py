"""Error types with messages that say what is wrong and how to fix it."""


class ConfigError(ValueError):
    """An invalid configuration value: the message names the key and the allowed values."""


class NonFiniteLossError(FloatingPointError):
    """Training produced a NaN or infinite loss; the message names the step and the loss terms."""
