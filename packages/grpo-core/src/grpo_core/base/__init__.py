"""Errors, problem lists, parameter binding, text helpers, tables, time limits, worker pools. Imports nothing of grpo's."""
