"""The prompt fitted to the model's context window, in tokens.

The sources are already bounded in characters (DOCSBOT_CONTEXT_BUDGET_CHARS), but a model's window
is in tokens, and what a character budget is in tokens depends on the text and the tokenizer. When
the window is known (DOCSBOT_LLM_CONTEXT_TOKENS, or the endpoint says it, rag/providers), the
prompt is counted (the endpoint's tokenizer where it has one, else a conservative estimate) and the
last sources are left out until it fits with room for the reply: a prompt that cannot fit is never
sent (one endpoint refuses it, another cuts it, llama.cpp's server streams nothing).
"""
from __future__ import annotations

from collections.abc import Awaitable, Callable
from dataclasses import dataclass, replace

from rag.prompt import Source, build_messages
from rag.providers.protocol import Messages, Usage

# A chat template's tokens around each message (ChatML: `<|im_start|>role\n` ... `<|im_end|>\n`,
# 5) and before the reply, with a margin: the contents are counted, the template is not.
TEMPLATE_TOKENS = 16
Counter = Callable[[str], Awaitable[int]]


class PromptTooLong(Exception):
    """Not even the question with the first source's first words fits the window."""


def estimate_tokens(text: str) -> int:
    """More tokens than a BPE or WordPiece tokenizer makes of `text`, not many more: English prose
    is ~4 bytes a token, code and other scripts fewer (a CJK character is 3 bytes, 1-2 tokens)."""
    return -(-len(text.encode("utf-8")) // 3)


def reply_tokens(window: int, max_tokens: int) -> int:
    """The room kept for the reply: DOCSBOT_LLM_MAX_TOKENS, or half the window when that is less."""
    return min(max_tokens, window // 2)


@dataclass(frozen=True)
class Fitted:
    messages: Messages
    sources: int  # how many of the sources, from the first, the prompt holds
    prompt_tokens: int  # as counted (the endpoint's tokenizer or the estimate), the template included


def estimate_usage(messages: Messages, reply: str) -> Usage:
    """A completion's tokens when the endpoint did not say, estimated (no request to count them)."""
    prompt = sum(estimate_tokens(m["content"]) for m in messages) + TEMPLATE_TOKENS * (len(messages) + 1)
    return Usage(prompt, estimate_tokens(reply))


async def prompt_tokens(messages: Messages, count: Counter) -> int:
    return sum([await count(m["content"]) for m in messages]) + TEMPLATE_TOKENS * (len(messages) + 1)


async def fit(question: str, sources: list[Source], history: list[tuple[str, str]], budget: int,
              count: Counter) -> Fitted:
    """The messages with as many sources, in their order, as fit `budget` prompt tokens; the last
    one kept is cut short when even it alone does not fit whole."""
    kept = len(sources)
    while True:
        messages = build_messages(question, sources[:kept], history)
        used = await prompt_tokens(messages, count)
        if used <= budget:
            return Fitted(messages, kept, used)
        if kept > 1:
            kept -= 1
            continue
        if not kept:
            raise PromptTooLong(f"the prompt is {used} tokens without a source, and may have {budget}")
        text = sources[0].text
        size = await count(text)
        keep = int(len(text) * (size - (used - budget)) / max(size, 1) * 0.9)  # 10% more off: tokens vary
        if keep < min(200, len(text) // 2):
            raise PromptTooLong(f"the prompt is {used} tokens with the first source, and may have {budget}")
        sources = [replace(sources[0], text=text[:keep])]
