from devlint.rule import Rule


class UnusedNoqa(Rule):
    """
    ## What it does
    Reports the codes of a `# noqa: DEV001, DEV005` directive that no diagnostic on that
    line has in this run. Only devlint codes of rules that were selected and ran are
    judged: `# noqa: E501` (another linter's code) and the code of a rule that is not
    selected are left alone, since another tool or configuration may need them. For the
    same reason a blanket `# noqa` (no codes) is never reported: flake8, ruff and other
    tools honour it too, and devlint cannot tell what it silences for them. A code that
    looks like devlint's but names no rule (`DEV0003`, `DEV999`) is reported as unknown:
    it is a typo that silences nothing.

    A `# noqa:` followed by no code at all (`# noqa: some words`) is not a directive: it
    suppresses nothing, and devlint prints a warning for it ("Invalid `# noqa` directive
    on path:line: ..."), as ruff does. `# noqa because ...` (no colon) stays a blanket `# noqa`.

    Off by default, like ruff's RUF100: enable it with `--extend-select DEV015`.

    ## Why is this bad?
    A stale directive documents a bug that is no longer there, and it silently hides the
    next real bug of that kind on the same line.

    ## Example
    ```python
    model = torch.load(path, map_location=device)  # noqa: DEV007
    batch = batch.to(device)  # noqa: DEV003, E501
    loss = loss.cpu()  # noqa: DEV0012
    ```

    ## Use instead
    ```python
    model = torch.load(path, map_location=device)
    batch = batch.to(device)  # noqa: E501
    loss = loss.cpu()
    ```

    ## Fix safety
    The fix is safe: it removes only the unused codes (`# noqa: DEV001, DEV007` becomes
    `# noqa: DEV001`), or the whole directive when none is used, and keeps any other
    comment on the line (`# noqa: DEV007  # type: ignore` becomes `# type: ignore`).
    Directives inside strings are not directives and are never touched.
    """

    code = "DEV015"
    name = "unused-noqa"
    summary = "A `# noqa` directive that suppresses nothing, or names an unknown code"
    default = False
    fix = "safe"
    engine_only = True
    virtual_note = "a comment finding: nothing runs differently on any device"
