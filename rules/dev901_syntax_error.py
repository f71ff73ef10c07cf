from devlint.rule import Rule


class SyntaxErrorInFile(Rule):
    """
    ## What it does
    Reports a file that does not parse as Python 3, with the line and column of the
    error (Python 2 code, unfinished edits, merge conflict markers).

    ## Why is this bad?
    Python refuses to run it, and devlint cannot check any of its rules on it.

    ## Example
    ```python
    print "loss:", loss
    ```

    ## Use instead
    ```python
    print("loss:", loss)
    ```

    ## Fix safety
    No fix: what code that does not parse was meant to say is for its author to decide.
    """

    code = "DEV901"
    name = "syntax-error"
    summary = "The file is not valid Python"
    engine_only = True
