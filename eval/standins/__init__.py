"""Local servers speaking outside services' wire protocols (OpenAI), shipped so that the benchmarks
in eval/ and the tests both use them; the tests' other stand-ins are in tests/standins/."""
