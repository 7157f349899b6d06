"""rag: documents → chunks → embeddings → LanceDB → hybrid retrieval → prompt → answer → check."""
