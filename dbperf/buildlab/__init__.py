"""The build lab: SQLite from source by version, compiler variants, PGO trained apart from what is measured."""
