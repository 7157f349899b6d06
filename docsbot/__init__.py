"""docsbot: answers questions about a team's Markdown docs, with cited, versioned sources."""
