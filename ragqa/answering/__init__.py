"""Answering: prompts, extractive and LLM-written answers, citations from a draft to the checked
text, chat sessions, summaries and the message catalogue. Reads papers through the retriever,
never Chroma or the snapshot directly."""
