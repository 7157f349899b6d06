"""docsbot without Slack: the demo workspace (demo), a stand-in for Slack's Web API (standin),
the bot's real HTTP app wired to it (harness), and the console that drives it (console). Used by
`docsbot console`, the tests and the benchmarks; nothing here runs in a Slack deployment."""
