"""A toy parser backend with one option, for tests/test_plugins.py: the whole plugin is this module
and one registry line (``PARSER_BACKENDS.register("toy", "toy_parser:ToyParser")``).

It parses a sentence as a chain (word 1 is the root, every other word's head is the word before
it), labelling every non-root arc with its option ``--toy-label``.
"""

from __future__ import annotations

from dataclasses import dataclass

from synprep.parse.base import PARSE_SCHEMA, ParserBackend, ParserSpec, plugin_option
from synprep.types import ParsedSentence


@dataclass(frozen=True)
class ToyOptions:
    label: str = plugin_option("dep", help="UD relation of every non-root arc.", metavar="DEPREL")


class ToyParser(ParserBackend):
    name = "toy"
    Options = ToyOptions

    @classmethod
    def identity(cls, spec: ParserSpec) -> str:
        return f"toy|1|lang={spec.lang}|label={spec.backend_options().label}|schema={PARSE_SCHEMA}"

    def parse(self, sentences: list[list[str]]) -> list[ParsedSentence]:
        label = self.spec.backend_options().label
        return [ParsedSentence(list(words), ["X"] * len(words), list(range(len(words))),
                               ["root"] + [label] * (len(words) - 1)) for words in sentences]
