"""The one exception type that the CLI turns into a one-line message and exit code 2."""


class UserError(Exception):
    """Bad input from the user: a file, a key, a value. The message names the problem and where."""
