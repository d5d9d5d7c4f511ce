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
