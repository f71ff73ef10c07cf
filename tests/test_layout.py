"""``layout_problems``: lines a fix only carried along keep their indentation."""

from devlint.layout import layout_problems

CALL = 'x.to(\n    f"cuda:{rank}"\n)\n'


def test_an_argument_wrapped_in_a_written_choice_may_move_deeper() -> None:
    # the fix wrote the parentheses and the choice around the argument's own line (oslo)
    wrapped = (
        'x.to(\n    (\n        f"cuda:{rank}"\n        if avail\n        else "cpu"\n    )\n)\n'
    )
    assert layout_problems(CALL, wrapped) == []


def test_a_carried_line_moved_without_anything_written_is_a_problem() -> None:
    moved = 'x.to(\n        f"cuda:{rank}"\n)\n'
    assert layout_problems(CALL, moved) == ["line 2: indentation changed from 4 to 8"]


def test_a_carried_line_moved_left_of_where_it_was_is_a_problem() -> None:
    before = 'x.to(\n        f"cuda:{rank}",\n    y,\n)\n'
    after = 'x.to(\n    f"cuda:{rank}",\n    (\n        y\n    ),\n)\n'
    assert layout_problems(before, after) == ["line 2: indentation changed from 8 to 4"]
