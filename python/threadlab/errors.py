"""The two kinds of error the command line turns into one-line messages.

UserError: the user asked for something invalid (bad option value, unknown
run, unknown filter); exit status 2.  ThreadlabError: the request was fine
but something it depends on failed (a native program that does not answer
--list, an unwritable store); exit status 1.  Anything else is a bug and
keeps its traceback.
"""


class ThreadlabError(Exception):
    """A failure that is not the user's fault; reported in one line, exit 1."""

    exit_status = 1


class UserError(ThreadlabError):
    """An invalid request; reported in one line, exit 2."""

    exit_status = 2
