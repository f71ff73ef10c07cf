from devlint.rule import Rule


class UnreadableFile(Rule):
    """
    ## What it does
    Reports a file that devlint could not read or decode: a path named on the command
    line that does not exist (the other paths are still checked, as ruff reports E902),
    permissions, a broken symlink, bytes that are not valid in the file's encoding
    (UTF-8, or the one its PEP 263 coding cookie declares).

    ## Why is this bad?
    A file that cannot be read cannot be checked; silently skipping it would hide bugs.

    ## Example
    A Latin-1 file without a `# -*- coding: latin-1 -*-` cookie.

    ## Use instead
    Save the file as UTF-8, or declare its encoding with a coding cookie.

    ## Fix safety
    No fix: devlint never rewrites a file it cannot decode.
    """

    code = "DEV900"
    name = "unreadable-file"
    summary = "The file cannot be read or decoded"
    engine_only = True
