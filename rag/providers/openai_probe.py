"""`docsbot doctor`'s look at an OpenAI-compatible endpoint: it lists its models (the configured
one among them) and makes a one-token completion."""
from __future__ import annotations

from rag.config import LLMConfig
from rag.providers.openai_clients import openai_client
from rag.providers.protocol import ProbeFinding


def probe(config: LLMConfig, timeout_s: float) -> list[ProbeFinding]:
    import openai

    client = openai_client(config, timeout_s)
    where, model = config.base_url or "api.openai.com", config.chat_model
    try:
        models = [m.id for m in client.models.list()]
    except openai.APIConnectionError as exc:
        return [ProbeFinding("llm endpoint", "failed", f"cannot reach {where}: {type(exc).__name__}",
                             "check OPENAI_BASE_URL and that the endpoint is up and reachable from here")]
    except openai.AuthenticationError:
        return [ProbeFinding("llm endpoint", "failed", f"{where} refused the key (401)",
                             "set a valid OPENAI_API_KEY")]
    except openai.APIStatusError as exc:
        models = []
        listed = ProbeFinding("llm model", "warning", f"{where} does not list models (HTTP {exc.status_code})",
                              "make sure DOCSBOT_CHAT_MODEL names a model the endpoint serves")
    else:
        listed = (ProbeFinding("llm model", "ok", f"{model} is listed") if model in models
                  else ProbeFinding("llm model", "failed", f"{model} is not among the {len(models)} models listed",
                                    f"set DOCSBOT_CHAT_MODEL to one of: {', '.join(models[:8]) or '(none)'}"))
    found = [ProbeFinding("llm endpoint", "ok", f"{where} answers"), listed]
    try:
        client.chat.completions.create(model=model, max_tokens=1,
                                       messages=[{"role": "user", "content": "Reply with: ok"}])
        found.append(ProbeFinding("llm completion", "ok", "a one-token completion works"))
    except openai.OpenAIError as exc:
        status = getattr(exc, "status_code", None)
        brief = f"HTTP {status}" if status else type(exc).__name__
        found.append(ProbeFinding("llm completion", "failed", f"a one-token completion failed: {brief}",
                                  "check DOCSBOT_CHAT_MODEL, the key's quota and the provider's status"))
    return found
