"""The two exceptions that are nobody's kernel's fault: the user's input, and the harness's own work."""


class UserError(Exception):
    """Bad input from the user (unknown problem or version, malformed shapes.yaml, ...): the CLI
    turns it into one clear line and exit 2."""


class HarnessFault(Exception):
    """The harness's own work failed (generating a shape's inputs, the reference, writing a record):
    reported as "harness error: ...", never as the submission's failure."""
