"""Language codes as the parsers name their models: ISO 639-1 (``de``), not ``ger``/``deu``/``German``.

A user who types ``-s ger`` (ISO 639-2/B), ``-s deu`` (639-3) or ``-s german`` means ``de``; the
parser's "no model for 'ger'" then names the code to use (:func:`iso_code`) instead of suggesting a
download of a language that does not exist. The tables are langcodes' (ISO 639 and BCP 47 aliases)
and stanza's own language names.
"""

from __future__ import annotations


def iso_code(lang: str) -> str | None:
    """The ISO 639-1 (two-letter, where one exists) code of a language code or English name, or None.

    ``"ger"``, ``"deu"``, ``"German"``, ``"de-DE"`` → ``"de"``; ``"jpn"`` → ``"ja"``; ``"xx"`` → None.
    """
    import langcodes

    try:
        tag = langcodes.Language.get(lang)
        if tag.is_valid() and tag.language:
            return str(tag.language)
    except (langcodes.LanguageTagError, ValueError):
        pass
    try:
        from stanza.models.common.constant import lang_to_langcode

        return str(lang_to_langcode(lang))
    except Exception:  # stanza missing, or no such language name  # noqa: BLE001
        return None


def _stanza_code(lang: str) -> bool:
    """True for a code stanza names models by itself (``zh-hans``, ``nb``)."""
    try:
        from stanza.models.common.constant import lang2lcode, lcode2lang
    except ImportError:
        return False
    # stanza also lists aliases (``eng``): only a code that its language is named by counts
    return lang in lcode2lang and lang2lcode.get(lcode2lang[lang]) == lang


def wrong_code_message(lang: str) -> str | None:
    """``"'ger' is not a language code the parsers use: it is 'de' (ISO 639-1); run with de"``, or None
    when ``lang`` is already the ISO 639-1 code, a code stanza uses (``zh-hans``), or no language at all."""
    iso = iso_code(lang)
    if iso is None or iso == lang or _stanza_code(lang):
        return None
    return f"{lang!r} is not a language code the parsers use: it is {iso!r} (ISO 639-1); run with {iso} instead"


def close_code(lang: str, known: frozenset[str]) -> str | None:
    """The code of ``known`` a mistyped ``lang`` most likely meant (``dee`` → ``de``: its first two letters
    first, then the closest with the same first letter by :func:`difflib.get_close_matches`), or None."""
    import difflib

    low = lang.lower()
    if low[:2] in known:
        return low[:2]
    close = difflib.get_close_matches(low, sorted(k for k in known if k[:1] == low[:1]), n=1, cutoff=0.6)
    return close[0] if close else None


def stanza_codes() -> frozenset[str]:
    """The language codes stanza names models by (empty without stanza)."""
    try:
        from stanza.models.common.constant import lcode2lang
    except ImportError:
        return frozenset()
    return frozenset(c for c in lcode2lang if _stanza_code(c))
