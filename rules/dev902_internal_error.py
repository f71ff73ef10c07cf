from devlint.rule import Rule


class InternalError(Rule):
    """
    ## What it does
    Reports that devlint itself failed on this file, for example by exceeding the
    recursion limit on a 3 000-term expression. The rest of the run goes on.

    ## Why is this bad?
    The file was not checked. This is a devlint bug or limit: please report it with the
    file (or a reduced version of it).

    ## Example
    A generated file with one expression of thousands of nested calls.

    ## Use instead
    Nothing to change in your code; exclude the file or add `# devlint: noqa` to it
    until the bug is fixed.

    ## Fix safety
    No fix: the failure is devlint's, not the file's (please report it).
    """

    code = "DEV902"
    name = "internal-error"
    summary = "devlint failed on this file"
    engine_only = True
