"""The App Home tab through the real app: the person's level, example questions, `/docs` usage,
the index's status, and for admins the 👎 answers waiting for review."""
from __future__ import annotations

from bot.local import demo
from bot.deliveries import buttons
from bot.local.harness import LocalSlack
from bot.local.standin import visible_text
from tests.support.slack import VPN, answers, mention, open_home


async def test_home_shows_the_persons_level_examples_usage_and_status(local: LocalSlack) -> None:
    home = visible_text(await open_home(local, demo.BOB))
    assert "level *team*" in home and "/docs status" in home and "documents: 23" in home
    assert "What do the docs say about" in home and "*Feedback*" not in home
    assert "level *public*" in visible_text(await open_home(local, demo.GUEST))


async def test_admins_see_how_many_thumbs_down_wait_for_review(local: LocalSlack) -> None:
    assert "0 👎 answers waiting for review" in visible_text(await open_home(local, demo.ALICE))
    await mention(local, demo.BOB, demo.GENERAL, VPN)
    await local.settle()
    [answer] = answers(local, demo.GENERAL)
    await local.slack.click(demo.BOB, demo.GENERAL, buttons(answer)[1], answer)
    await local.settle()
    home = visible_text(await open_home(local, demo.ALICE))
    assert "1 👎 answer waiting for review" in home and "level *restricted*" in home
