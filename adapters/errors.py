"""Bad input, reported as one clear line.

Every adapter that reads something a person wrote (an instance file, a policy, a Job) raises
:class:`InputError` naming the file, the object and the field, so the CLI can print one line and
exit 2 instead of a traceback.
"""

from __future__ import annotations


class InputError(ValueError):
    """Input that cannot be used as given; ``str()`` is the one line shown to the user."""

    def __init__(
        self,
        message: str,
        *,
        source: str | None = None,
        obj: str | None = None,
        field: str | None = None,
    ) -> None:
        self.source = source
        self.obj = obj
        self.field = field
        self.detail = message
        super().__init__(message)

    def __str__(self) -> str:
        parts = [part for part in (self.source, self.obj, self.field) if part]
        return ": ".join([*parts, self.detail])

    def within(self, *, source: str | None = None, obj: str | None = None) -> InputError:
        """The same error, placed in a file or object that an outer reader knows and this one did not."""
        return InputError(
            self.detail,
            source=self.source or source,
            obj=self.obj or obj,
            field=self.field,
        )
