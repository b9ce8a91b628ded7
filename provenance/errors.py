"""The one exception type that reaches the user as a one-line error."""


class ProvError(Exception):
    """A user-facing failure: bad input, a refused operation. `exit_code` is the status."""

    def __init__(self, message: str, exit_code: int = 2) -> None:
        super().__init__(message)
        self.exit_code = exit_code
