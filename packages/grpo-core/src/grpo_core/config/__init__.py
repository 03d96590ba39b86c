"""The run configuration: schema, parsing, checks, translations of TRL's and open-r1's fields, models and precision."""
