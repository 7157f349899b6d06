"""`docsbot propose` (registered into the `docsbot` command by `register`): a docs change from a
terminal, the same a Slack proposal makes (proposals/): the text placed in the page's section on a
`docsbot/*` branch, pushed, and a pull or merge request opened with the page's owners as
reviewers; for a local repository a branch and a patch file."""
from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import TYPE_CHECKING

from rag import Level

if TYPE_CHECKING:  # the command imports what it runs, so that registering it costs nothing
    from foundation.settings import Settings
    from state.proposals import Proposed


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("propose", help="propose a docs change: a branch and a pull request adding text to a page")
    p.add_argument("path", help="the page, as citations name it (`ops/deploy.md`, `handbook:ops/deploy.md`)")
    p.add_argument("--section", default="", help="its section as citations name it (`Deploying › Staging`); "
                                                  "default: the page's opening text")
    text = p.add_mutually_exclusive_group(required=True)
    text.add_argument("--text", help="the text to add")
    text.add_argument("--text-file", type=Path, help="a file holding the text to add (`-`: standard input)")
    p.add_argument("--title", default="", help="a new page's title, when there is no page at PATH yet")
    p.add_argument("--by", default="", help="who proposes it (default: the user running the command)")
    p.add_argument("--email", default="", help="their e-mail, for the commit's Co-authored-by")
    p.add_argument("--question", default="", help="the question it answers, quoted in the request")
    p.add_argument("--json", action="store_true", help="print the outcome as JSON")
    p.set_defaults(handler=cmd_propose)


def cmd_propose(settings: Settings, args: argparse.Namespace) -> int:
    import asyncio
    import getpass

    from foundation.forge_target import proposals_folder, target_of
    from proposals.propose import Proposal, propose
    from state.proposals import Proposed

    target, path = target_of(settings, args.path, proposals_folder(settings))
    text = args.text if args.text is not None else (
        sys.stdin.read() if str(args.text_file) == "-" else args.text_file.read_text(encoding="utf-8"))
    proposal = Proposal(path, args.section, text, args.by or getpass.getuser(), args.email, args.question,
                        new_title=args.title)
    done = asyncio.run(propose(proposal, target))
    if done.pushed:
        asyncio.run(_record(settings, Proposed(done.branch, args.path, args.section, Level.restricted, done.url,
                                               done.number, proposal.proposer)))
    if args.json:
        print(json.dumps({"branch": done.branch, "commit": done.commit, "placed": done.placed, "pushed": done.pushed,
                          "url": done.url, "number": done.number, "patch": str(done.patch) if done.patch else "",
                          "reviewers": list(done.reviewers), "note": done.note}))
    else:
        if done.url:
            print(f"opened {done.url} (branch {done.branch})")
        elif done.pushed:
            print(f"pushed branch {done.branch}")
        if done.patch:
            print(f"patch: {done.patch}")
        if done.reviewers:
            print(f"reviewers: {' '.join(done.reviewers)}")
        if done.note:
            print(f"note: {done.note}")
    return 0 if done.placed else 1



async def _record(settings: Settings, proposed: Proposed) -> None:
    """In the state database for `docsbot report`; its level is `restricted` (the command does not
    read the index), so a report lists it to restricted readers only."""
    from foundation.wiring import open_state_db
    from state.proposals import Proposals

    db = await open_state_db(settings)
    try:
        await Proposals(db).add(proposed)
    finally:
        await db.close()
