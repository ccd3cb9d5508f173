"""The index: the Chroma collection (embedded or a server), the BM25 snapshot and paper table
beside it, chunking and ingest (with its locks). It stores and reads; it does not rank."""
