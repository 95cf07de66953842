"""The one exception the CLI turns into a single clear line and a non-zero exit."""


class UserError(Exception):
    """Bad input from the user (unknown problem or version, malformed shapes.yaml, ...)."""
