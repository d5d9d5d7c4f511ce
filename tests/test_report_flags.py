"""The report's flags, each checked on folders where it must fire and where it must not (the flag matrix),
and the language check's warning for a minority of lines in the other side's language.

The folders are built once for the module: gold parses imported with ``--parser conllu`` (UD English/German
PUD, UD Japanese GSD, and a Chinese text written here, word-segmented as Chinese treebanks are), and real
stanza only where a parser must run (``annotate --parse-src``: lowercased pieces, cased words).
"""

from __future__ import annotations

import base64
import io
import logging
from pathlib import Path

import pytest
from helpers import SAMPLE_DATA

from synprep.config import DataConfig
from synprep.pipeline import Runtime, SplitInputs, run_annotate, run_pipeline
from synprep.report import build_report
from synprep.text.bpe import apply_bpe_lines, learn_bpe
from synprep.text.case import moses_lowercase
from synprep.text.langid import check_language
from synprep.text.tokenize import tokenize_lines

N = 30
#: characters that need Moses escapes or break bracketed trees: UD sentences with them are left out
SPECIAL = set("()[]&<>|\"'")

#: Chinese sentences (written for this test, traditional script) segmented into words as Chinese treebanks
#: are: py3langid calls most of them Cantonese ('yue') with the spaces, every one Chinese joined
ZH = """這 是 一 個 關於 城市 發展 的 長篇 報導 ， 記者 訪問 了 許多 居民 和 官員 。
政府 在 今年 的 預算 中 增加 了 教育 和 醫療 的 支出 ， 引起 各界 的 關注 。
研究 人員 發現 ， 氣候 變化 對 農業 生產 的 影響 比 預期 的 更 嚴重 。
他 說 ， 經濟 復甦 需要 時間 ， 但 政府 已經 採取 了 必要 的 措施 。
這 家 公司 宣布 將 在 明年 推出 新 的 產品 ， 以 滿足 市場 的 需求 。
許多 學生 選擇 在 畢業 後 出國 留學 ， 希望 獲得 更 好 的 工作 機會 。
專家 認為 ， 網路 安全 問題 已經 成為 國家 安全 的 重要 組成 部分 。
當地 居民 對 新建 的 公園 表示 歡迎 ， 認為 它 改善 了 社區 的 環境 。
總統 在 演講 中 強調 ， 國際 合作 是 解決 全球 問題 的 唯一 途徑 。
這 部 電影 講述 了 一 個 普通 家庭 在 戰爭 年代 的 生活 故事 。
由於 天氣 原因 ， 航空 公司 取消 了 當天 所有 飛往 北方 的 航班 。
科學家 正在 研究 如何 利用 太陽能 為 偏遠 地區 提供 電力 。
博物館 的 展覽 吸引 了 來自 世界 各地 的 遊客 ， 門票 很快 就 賣完 了 。
醫生 建議 人們 多 運動 ， 少 吃 油膩 的 食物 ， 以 保持 身體 健康 。""".splitlines()
EN_FOR_ZH = """This is a long report about the development of the city, and the reporter met many residents and officials.
This year the government raised spending on education and health care in its budget, which drew wide attention.
Researchers found that the effect of climate change on farming is more serious than expected.
He said that the economic recovery needs time, but the government has already taken the necessary steps.
The company announced that it will launch a new product next year to meet the demand of the market.
Many students choose to study abroad after they graduate, hoping to find better jobs.
Experts think that the security of networks has become an important part of national security.
Local residents welcomed the newly built park and said that it has improved their neighbourhood.
In his speech the president stressed that international cooperation is the only way to solve global problems.
The film tells the story of the life of an ordinary family in the years of the war.
Because of the weather, the airline cancelled all of the flights to the north on that day.
Scientists are studying how to use solar power to bring electricity to remote areas.
The exhibition at the museum drew visitors from all over the world, and the tickets sold out quickly.
Doctors advise people to exercise more and eat less fatty food to stay healthy.""".splitlines()


def _conllu_block(words: list[str], line: int) -> str:
    """A chain tree over ``words`` (word 1 the root), numbered as ``synprep parse`` numbers lines."""
    rows = [f"{i}\t{w}\t_\tX\t_\t_\t{i - 1}\t{'root' if i == 1 else 'dep'}\t_\t_" for i, w in enumerate(words, 1)]
    return f"# line = {line}\n" + "\n".join(rows)


def _ud_blocks(path: Path, n: int) -> dict[str, tuple[str, list[str], str]]:
    """sent_id → (block, words, text) of the first ``n`` sentences without multiword tokens, empty nodes
    or SPECIAL characters."""
    out: dict[str, tuple[str, list[str], str]] = {}
    for block in path.read_text("utf-8").strip().split("\n\n"):
        rows = [r.split("\t") for r in block.splitlines() if not r.startswith("#")]
        if any("-" in r[0] or "." in r[0] for r in rows) or any(SPECIAL & set(r[1]) for r in rows):
            continue
        head = {r.split(" = ", 1)[0]: r.split(" = ", 1)[-1] for r in block.splitlines() if r.startswith("# ")}
        out[head["# sent_id"]] = (block, [r[1] for r in rows], head.get("# text", " ".join(r[1] for r in rows)))
        if len(out) >= n:
            break
    return out


def _write(path: Path, lines: list[str]) -> str:
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return str(path)


@pytest.fixture(scope="module")
def folders(tmp_path_factory, shared_data, stanza_dir):
    """Every folder of the matrix (name → path); the swapped-pairs run's log is kept as ``swapped_log``."""
    d = tmp_path_factory.mktemp("flag_matrix")
    ud = shared_data / "ud"
    out: dict[str, Path] = {}
    conllu = DataConfig.of(src_lang="en", tgt_lang="de", parser="conllu", merges=200, shard_size=20)
    # English PUD gold → German PUD (parallel by sent_id)
    en = _ud_blocks(ud / "en_pud-ud-test.conllu", 400)
    de_all = {}
    for b in (ud / "de_pud-ud-test.conllu").read_text("utf-8").strip().split("\n\n"):
        rows = [r.split("\t") for r in b.splitlines() if not r.startswith("#")]
        sid = next(r for r in b.splitlines() if r.startswith("# sent_id"))[len("# sent_id = "):]
        text = next(r for r in b.splitlines() if r.startswith("# text = "))[len("# text = "):]
        ok = not any("-" in r[0] or "." in r[0] for r in rows) and not any(SPECIAL & set(r[1]) for r in rows)
        de_all[sid] = ([r[1] for r in rows], text, ok)
    ids = [i for i in en if i in de_all and de_all[i][2]][:N]
    gold = _write(d / "en.conllu", [_conllu_block(en[i][1], k) + "\n" for k, i in enumerate(ids, 1)])
    de_text = _write(d / "pud.de", [de_all[i][1] for i in ids])
    en_text = _write(d / "pud.en", [en[i][2] for i in ids])
    out["gold"] = d / "gold"
    run_pipeline(SplitInputs(tgt=de_text, conllu=gold, clean=False), out["gold"], conllu)
    # same language: English → English, and English → German labelled English (must fire)
    out["same"] = d / "same"
    run_pipeline(SplitInputs(tgt=en_text, conllu=gold, clean=False), out["same"], conllu.replace(tgt_lang="en"))
    out["same_wrong"] = d / "same_wrong"
    run_pipeline(SplitInputs(tgt=de_text, conllu=gold, clean=False), out["same_wrong"],
                 conllu.replace(tgt_lang="en", language_check=False))
    # a high drop share: the same pairs cleaned with a token ratio of 1.05
    out["high_drop"] = d / "high_drop"
    run_pipeline(SplitInputs(tgt=de_text, conllu=gold, clean=True), out["high_drop"], conllu.replace(ratio=1.05))
    # swapped pairs: every third pair has its sides the other way round (German parses on the source side)
    swapped = [k % 3 == 2 for k in range(len(ids))]
    sw_conllu = _write(d / "sw.conllu", [_conllu_block(de_all[i][0] if s else en[i][1], k) + "\n"
                                         for k, (i, s) in enumerate(zip(ids, swapped, strict=True), 1)])
    sw_tgt = _write(d / "sw.de", [en[i][2] if s else de_all[i][1] for i, s in zip(ids, swapped, strict=True)])
    out["swapped"] = d / "swapped"
    run_pipeline(SplitInputs(tgt=sw_tgt, conllu=sw_conllu, clean=False), out["swapped"], conllu)
    # gold CJK: Japanese GSD and the Chinese text above, each with an English target
    ja = _ud_blocks(ud / "ja_gsd-ud-test.conllu", N)
    ja_gold = _write(d / "ja.conllu", [_conllu_block(w, k) + "\n" for k, (_, w, _t) in enumerate(ja.values(), 1)])
    ja_tgt = _write(d / "ja.en", (SAMPLE_DATA / "train.en").read_text("utf-8").splitlines()[:len(ja)])
    out["ja_gold"] = d / "ja_gold"
    run_pipeline(SplitInputs(tgt=ja_tgt, conllu=ja_gold, clean=False), out["ja_gold"],
                 conllu.replace(src_lang="ja", tgt_lang="en"))
    zh_gold = _write(d / "zh.conllu", [_conllu_block(s.split(), k) + "\n" for k, s in enumerate(ZH, 1)])
    zh_tgt = _write(d / "zh.en", EN_FOR_ZH)
    out["zh_gold"] = d / "zh_gold"
    # the language check is off here so that the folder exists whatever the check says (tested on its own below)
    run_pipeline(SplitInputs(tgt=zh_tgt, conllu=zh_gold, clean=False), out["zh_gold"],
                 conllu.replace(src_lang="zh", tgt_lang="en", language_check=False, merges=100))
    # a tiny split: 50 lines
    tiny = _ud_blocks(ud / "en_pud-ud-test.conllu", 50)
    tiny_ids = [i for i in tiny if i in de_all][:50]
    out["tiny"] = d / "tiny"
    tiny_conllu = _write(d / "tiny.conllu", [_conllu_block(tiny[i][1], k) + "\n" for k, i in enumerate(tiny_ids, 1)])
    run_pipeline(SplitInputs(tgt=_write(d / "tiny.de", [de_all[i][1] for i in tiny_ids]), conllu=tiny_conllu,
                             clean=False), out["tiny"], conllu)
    # annotate: lowercased BPE pieces, the parser reading the cased words (--parse-src) or the pieces' words
    raw_de = (SAMPLE_DATA / "train.de").read_text("utf-8").splitlines()[:N]
    raw_en = (SAMPLE_DATA / "train.en").read_text("utf-8").splitlines()[:N]
    cased = tokenize_lines(raw_de, "de")
    lower_de, lower_en = [moses_lowercase(x) for x in cased], [moses_lowercase(x) for x in tokenize_lines(raw_en, "en")]
    tok_de, tok_en = _write(d / "tok.de", lower_de), _write(d / "tok.en", lower_en)
    learn_bpe([tok_de, tok_en], 300, d / "code")
    src = _write(d / "bpe.de", apply_bpe_lines(lower_de, str(d / "code")))
    tgt = _write(d / "bpe.en", apply_bpe_lines(lower_en, str(d / "code")))
    stanza = DataConfig.of(src_lang="de", tgt_lang="en", stanza_package="synprep", shard_size=20)
    runtime = Runtime(cache=str(d / "cache.sqlite"), parser={"dir": str(stanza_dir)})
    out["parse_src"] = d / "parse_src"
    run_annotate(SplitInputs(src=src, tgt=tgt, parse_src=_write(d / "cased.de", cased)), out["parse_src"], stanza,
                 runtime=runtime)
    out["annotate_lower"] = d / "annotate_lower"
    run_annotate(SplitInputs(src=src, tgt=tgt), out["annotate_lower"], stanza, runtime=runtime)
    return out


@pytest.fixture(scope="module")
def reports(folders):
    return {name: build_report(path) for name, path in folders.items()}


#: folder → the flags it must raise (id, split); every other language, case and drop flag must stay silent
MATRIX = {
    "gold": set(),
    "same": set(),
    "same_wrong": {("language", "train")},
    "high_drop": {("many-dropped", "train")},
    "swapped": {("language-minority", "train")},
    "ja_gold": set(),
    "zh_gold": set(),
    "tiny": set(),
    "parse_src": set(),
    "annotate_lower": {("lowercased", "train")},
}
CHECKED = ("language", "language-minority", "lowercased", "many-dropped")


@pytest.mark.parametrize("name", list(MATRIX))
def test_flag_matrix(reports, name):
    got = {(f["id"], f["split"]) for f in reports[name]["flags"] if f["id"] in CHECKED}
    assert got == MATRIX[name], [f for f in reports[name]["flags"] if f["id"] in CHECKED]


def _flag(report: dict, kind: str) -> dict:
    (flag,) = [f for f in report["flags"] if f["id"] == kind]
    return flag


def test_parse_src_folder_is_judged_by_the_words_the_parser_read(reports):
    """The --parse-src folder's pieces are lowercased and its stored words cased: the report reads the words;
    without --parse-src the words the parser read are lowercased, and the fix names --parse-src."""
    assert reports["parse_src"]["splits"]["train"]["config"]["parse_src"] is True
    flag = _flag(reports["annotate_lower"], "lowercased")
    assert "--parse-src FILE" in flag["fix"] and "stored in the shards" in flag["evidence"]


def test_chinese_gold_is_chinese(folders):
    """Word-segmented Chinese is read as written: no 'yue' in the report, and the pipeline's own check on the
    CoNLL-U words accepts it (before, the check refused the folder as Cantonese)."""
    from synprep.text.langid import detect_language

    out = folders["zh_gold"].parent / "zh_checked"
    d = folders["zh_gold"].parent
    run_pipeline(SplitInputs(tgt=str(d / "zh.en"), conllu=str(d / "zh.conllu"), clean=False), out,
                 DataConfig.of(src_lang="zh", tgt_lang="en", parser="conllu", merges=100))
    assert (out / "manifest.json").is_file()
    assert detect_language(ZH, lang="zh").lang == "zh"
    assert detect_language(ZH).lang == "zh"  # Cantonese counts as Chinese


def test_swapped_pairs_are_flagged_with_their_lines(reports):
    """Both sides are flagged, each naming the other side's language and the swapped lines."""
    src, tgt = [f for f in reports["swapped"]["flags"] if f["id"] == "language-minority"]
    assert src["message"].startswith("33% of the source lines are in 'de'")
    assert tgt["message"].startswith("33% of the target lines are in 'en'")
    assert all("lines 3, 6, 9, 12, 15, ..." in f["evidence"] for f in (src, tgt))


def test_many_dropped_names_the_reasons_and_the_fix(reports):
    flag = _flag(reports["high_drop"], "many-dropped")
    s = reports["high_drop"]["splits"]["train"]
    assert f"clean:ratio {s['dropped']['clean:ratio']}" in flag["evidence"] and "--ratio" in flag["fix"]
    assert s["dropped"]["clean:ratio"] / s["input_lines"] >= 0.1


def test_tiny_split_gets_wider_histogram_bins(reports):
    from synprep.report.figures import hist_bins

    h = reports["tiny"]["splits"]["train"]["lengths"]["src_words"]
    x, y, width = hist_bins(h)
    assert h["n"] == 50 and width >= 3 and 5 <= x.size <= 12
    assert abs(float((y * width).sum()) - 1.0) < 1e-9
    big = {"counts": [1000] * 40, "overflow": 0}
    assert hist_bins(big)[2] == 1  # 40,000 values over 41 lengths: one bin per length


def test_example_pairs_are_embedded_at_show_size(folders):
    """The page's example PNGs are the size `show --png` draws them (100 dpi), shown unscaled."""
    from PIL import Image

    from synprep.report import write_report
    from synprep.show import load_pair, pair_figure

    rep = build_report(folders["gold"], languages=False)
    page = folders["gold"].parent / "gold.html"
    write_report(rep, page)
    html = page.read_text("utf-8")
    split, index = rep["examples"][0]
    fig = pair_figure(load_pair(folders["gold"], split, index=index))
    want = round(fig.get_size_inches()[0] * fig.dpi)
    marker = '<div class="wide"><img class="pair" alt="pair '
    assert html.count(marker) == len(rep["examples"])
    data = html.split(marker, 1)[1].split('src="data:image/png;base64,', 1)[1].split('"', 1)[0]
    assert Image.open(io.BytesIO(base64.b64decode(data))).size[0] == want >= 1000


# --- the pipeline's language check on the probe's corpora -----------------------------------------------


def _ted(n: int = 200) -> tuple[list[str], list[str]]:
    de = (SAMPLE_DATA / "train.de").read_text("utf-8").splitlines()[:n]
    en = (SAMPLE_DATA / "train.en").read_text("utf-8").splitlines()[:n]
    return de, en


def _swap_every(de: list[str], en: list[str], every: int) -> list[str]:
    return [e if k % every == every - 1 else d for k, (d, e) in enumerate(zip(de, en, strict=True))]


@pytest.mark.parametrize("case", ["45 % swapped", "every third swapped", "half German half English"])
def test_language_check_warns_on_a_minority_in_the_other_language(case, caplog):
    de, en = _ted()
    if case == "45 % swapped":
        side = [e if (k * 9) % 20 < 9 else d for k, (d, e) in enumerate(zip(de, en, strict=True))]
    elif case == "every third swapped":
        side = _swap_every(de, en, 3)
    else:
        side = [" ".join(d.split()[:len(d.split()) // 2] + e.split()[len(e.split()) // 2:])
                for d, e in zip(de, en, strict=True)]
    with caplog.at_level(logging.WARNING, logger="synprep"):
        guess = check_language(side, "de", "-s", "train.de", other="en", numbers=range(1, len(side) + 1))
    assert guess is not None and guess.lang == "de"  # not refused: most lines are German
    msgs = [r.getMessage() for r in caplog.records if "the other side's language" in r.getMessage()]
    assert len(msgs) == 1 and msgs[0].startswith("warning: train.de: ") and "English ('en'" in msgs[0]
    if case == "every third swapped":
        assert "lines 3, 6, 9, 12, 15, ..." in msgs[0]


def test_language_check_is_silent_on_clean_text_and_same_language(caplog):
    de, en = _ted()
    with caplog.at_level(logging.WARNING, logger="synprep"):
        check_language(de, "de", "-s", "train.de", other="en")
        check_language(en, "en", "-t", "train.en", other="de")
        check_language(_swap_every(en, en, 3), "en", "-t", "t.en", other="en")
    assert not caplog.records


def test_a_side_that_cannot_be_checked_is_a_warning(caplog):
    """A fully swapped corpus of two-word lines: nothing votes, and the run is told so as a warning."""
    with caplog.at_level(logging.INFO, logger="synprep"):
        check_language(["guten Tag", "vielen Dank"] * 20, "en", "-s", "s.en", other="de")
    (rec,) = caplog.records
    assert rec.levelno == logging.WARNING and "not checked for its language" in rec.getMessage()


def test_pipeline_run_warns_with_line_numbers(folders, caplog):
    """The swapped-pairs corpus through `pipeline` (gold parses): the run goes on, warning for each side."""
    d = folders["swapped"].parent
    with caplog.at_level(logging.WARNING, logger="synprep"):
        run_pipeline(SplitInputs(tgt=str(d / "sw.de"), conllu=str(d / "sw.conllu"), clean=False), d / "swapped_again",
                     DataConfig.of(src_lang="en", tgt_lang="de", parser="conllu", merges=200))
    msgs = [r.getMessage() for r in caplog.records if "the other side's language" in r.getMessage()]
    assert len(msgs) == 2 and all("lines 3, 6, 9, 12, 15, ..." in m for m in msgs)


def test_the_language_sample_is_spread_over_the_whole_split(folders):
    """A sample smaller than the split takes pairs evenly from all of it, not its first pairs (a corpus whose
    last 45 % was swapped went unflagged): 10 of the 30 pairs, one in every 3, the last third included."""
    from synprep.report.flags import sample_text
    from synprep.shards import Manifest, open_split

    folder = folders["gold"]
    attrs = open_split(folder, "train")[0].attrs
    sample = sample_text(folder, "train", Manifest.load(folder), attrs, n=10)
    assert sample["lines"] == list(range(1, 31, 3))
    assert len(sample["src"]) == len(sample["tgt"]) == 10
