from devlint.rule import Rule


class UnusedNoqa(Rule):
    """
    ## What it does
    Reports a `# noqa` directive that silenced nothing in this run: a blanket `# noqa` on
    a line without any diagnostic, or the codes of a `# noqa: DEV001, DEV005` that no
    diagnostic on that line has. Only devlint codes of rules that were selected and ran
    are judged: `# noqa: E501` (another linter's code) and the code of a rule that is not
    selected are left alone, since another tool or configuration may need them.

    Off by default, like ruff's RUF100: enable it with `--extend-select DEV015`.

    ## Why is this bad?
    A stale directive documents a bug that is no longer there, and it silently hides the
    next real bug of that kind on the same line.

    ## Example
    ```python
    model = torch.load(path, map_location=device)  # noqa: DEV007
    batch = batch.to(device)  # noqa
    ```

    ## Use instead
    ```python
    model = torch.load(path, map_location=device)
    batch = batch.to(device)
    ```

    ## Fix safety
    The fix is safe: it removes only the unused codes (`# noqa: DEV001, DEV007` becomes
    `# noqa: DEV001`), or the whole directive when none is used, and keeps any other
    comment on the line (`# noqa: DEV007  # type: ignore` becomes `# type: ignore`).
    Directives inside strings are not directives and are never touched.
    """

    code = "DEV015"
    name = "unused-noqa"
    summary = "A `# noqa` directive that suppresses nothing"
    default = False
    fix = "safe"
    engine_only = True
