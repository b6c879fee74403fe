#!/usr/bin/env python3
"""Make the tokenizer fixtures with Hugging Face `tokenizers` (pip install tokenizers).

Run from anywhere: python3 tests/tokenizer/make_fixtures.py
It reads tinyshakespeare from ../shared/data/ beside the repository (never
copied into it) and writes, under tests/tokenizer/fixtures/:

  gpt2_1024.json   a byte-level BPE trained by BpeTrainer on the first 300 000
                   bytes: ByteLevel pre-tokenizer (GPT-2's regex), the full
                   ByteLevel alphabet, <|endoftext|>, vocabulary 1024
  llama3_512.json  the same kind on the first 100 000 bytes, but split by
                   Llama 3's regex (Split, Isolated) before a regex-less
                   ByteLevel, vocabulary 512
  gpt2_spaces_300.json  GPT-2's kind on the first 40 000 bytes with every
                   newline made " \n\r  ", vocabulary 300: merges of white
                   space, so that where a regex cuts white space shows in ids
  cases.json       test texts of our own (Unicode, white space runs, digits,
                   contractions, special tokens) and the ids each tokenizer
                   gives them (encode(text, add_special_tokens=False)); also
                   under "llama3_512_ignore_merges" the ids of llama3_512 with
                   model.ignore_merges set (as Llama 3's own tokenizer.json
                   has it: a piece that is a whole token is not merged) and
                   two tokens no merge makes, "zzq" and "Ġzzq" (ids 512, 513),
                   so that the setting changes ids; and under
                   "llama3_512_prefix_space" those of llama3_512 with its
                   ByteLevel's add_prefix_space set (after a Split,
                   tokenizers puts the space before every piece); and under
                   "llama3_512_nfc" those of llama3_512 with the normalizer
                   NFC (as Qwen2's tokenizer.json has it), which the
                   "decomposed" case's combining marks change (its
                   "text_nfc" is the text composed, by Python's unicodedata);
                   and under "llama3_512_qwen2" those of llama3_512 with
                   Qwen2's regex (Llama 3's with single digits) and NFC, the
                   pre-tokenizer and normalizer of Qwen2's and Qwen3's
                   tokenizer.json, and the merges "1 2" and "12 3" (tokens
                   "12" and "123", ids 512 and 513), so that where the regex
                   cuts digits changes ids
  counts.json      BpeTrainer with the gpt2_1024 settings on the whole of
                   tinyshakespeare: how many tokens its tokenizer encodes the
                   whole text into (the reference for `tessel tokenizer train`)

`make_fixtures.py json` writes json_cases.json from the committed fixtures:
variants of them that each change a few fields of the tokenizer.json
("set": a dotted path -> the new value), as VARIANTS lists them, with the
ids tokenizers gives each added token ("added_ids": it numbers added_tokens
itself, whatever ids the file writes) and its ids for the variant's texts.
The "added_flags_*" variants (flagged_variants) give added tokens every
combination of normalized, special, lstrip, rstrip and single_word, on
byte-level BPEs (NFC, none, add_prefix_space, Lowercase) and SentencePiece's
(prepend first, always, the Prepend normalizer); their texts are FLAGGED_TEXTS
and 40 seeded random joins of FLAGGED_PIECES, each with "decoded" (what
tokenizers decodes its ids to), and "decodes": 60 seeded random id
sequences, half their draws added tokens or tokens of one byte, and 40 a
third of whose draws are special tokens (special_ids), and their decoded
text (U+FFFD where bytes are not valid UTF-8), as decode gives it and
with skip_special_tokens ("text_skip_special": the ids of added tokens
marked special left out).
test_tokenizer_json.c loads the same variants and says which tessel reads
(then with these ids and texts) and which it refuses.

Each text is fed to the trainer as one sequence (train_from_iterator([text])),
which is what `tessel tokenizer train FILE` does with a file.

`make_fixtures.py unsplit` trains unsplit_1000.json: a byte-level BPE of
1000 tokens whose ByteLevel has no regex (no pre-tokenizer cuts its text),
trained on chunks of tinyshakespeare and of seeded MIXED_PIECES (numbers,
punctuation of several Unicode categories, CJK, emoji, white space), so
that its merges cross digits, punctuation, spaces and newlines: where a
pre-tokenizer cuts shows in the ids. `make_fixtures.py json` then writes
pretok_cases.json beside json_cases.json: PRETOK_VARIANTS, unsplit_1000
with the pre-tokenizers of StarCoder, Falcon and DeepSeek (LLM, Coder, V3)
and Splits of every behavior, inverted or not, each with PRETOK_TEXTS and
40 seeded random joins of MIXED_PIECES, in the same form.

`make_fixtures.py classes` writes char_classes.json: the code points that
tokenizers' Punctuation and Digits pre-tokenizers cut out as characters of
their own (its is_punc: ASCII punctuation or a P* category of the
unicode_categories crate's old tables; Rust's char::is_numeric), as
ranges, found by running them over every code point; and prints those
ranges as the C tables of core/tokenizer/charclass.c.

`make_fixtures.py qwen2` adds only the "llama3_512_qwen2" ids to cases.json,
from the committed llama3_512.json (made so with tokenizers 0.23.3).

`make_fixtures.py sentencepiece` (pip install sentencepiece transformers
tokenizers protobuf) trains sp_1000.json: a SentencePiece BPE with byte
fallback on the first 100 000 bytes, vocabulary 1000, made a tokenizer.json
by transformers as it converts Llama 2's tokenizer.model. cases.json gets
the SP_CASES texts (with every tokenizer's ids) and, for every case, the
ids of sp_1000 and four variants of it (sp_1000_always, sp_1000_legacy,
sp_1000_split, sp_1000_joined: see sentencepiece_variants) and what transformers decodes
them to ("<name>_decoded"; its Strip drops the first space).
"""
import json
import os
import re
import sys
import unicodedata

from tokenizers import Tokenizer, decoders, models, pre_tokenizers, processors, trainers, Regex

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
DATA = os.path.join(os.path.dirname(ROOT), "shared", "data", "tinyshakespeare.txt")
OUT = os.path.join(HERE, "fixtures")

LLAMA3 = (r"(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1,3}| ?[^\s\p{L}\p{N}]+[\r\n]*|"
          r"\s*[\r\n]+|\s+(?!\S)|\s+")
# transformers' Qwen2Tokenizer PRETOKENIZE_REGEX, as Qwen2's and Qwen3's tokenizer.json split
QWEN2 = (r"(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}| ?[^\s\p{L}\p{N}]+[\r\n]*|"
         r"\s*[\r\n]+|\s+(?!\S)|\s+")

CASES = [
    ("plain", "Hello, world! This is a plain English sentence, with some punctuation."),
    ("contractions", "I'm sure they'll say we'd've done it; don't you think? SHE'S HERE, You're right, we've WON'T."),
    ("digits", "In 1999 there were 12345678 people; pi is 3.14159, agent 007, the 42nd and 1,000,000th."),
    ("whitespace", "a  b   c\t\td\n\n\nnew    paragraph \n  \t end   "),
    ("leading_space", "   three spaces first, and two last  "),
    ("newlines_only", "\n\n\n\n"),
    ("unicode", "Café naïve — 日本語のテキスト, Ελληνικά, русский язык, 🙂👍🏽 emoji; مرحبا بالعالم"),
    ("unicode_spaces", "no\u00a0break\u2003em\u3000ideographic\u2028line\u2029para\u0085nel\u202fnarrow"),
    ("unicode_digits", "Arabic-Indic \u0661\u0662\u0663, full-width \uff11\uff12\uff13\uff14, superscript x\u00b2"),
    ("special", "first document<|endoftext|>second document <|endoftext|><|endoftext|> third"),
    ("special_lookalike", "<|endoftext| and <|endoftext|x> are not special, <|endoftext|> is"),
    ("code", "def f(x):\n    return x**2 + 1  # square\n\tif a != b: print('\"quoted\"')\n"),
    ("long_spaces", " " * 1000 + "x" + " " * 300),
    ("mixed_case_contractions", "IT'S, it's, It'S; I'M, I'LL, THEY'RE, WE'VE, HE'D"),
    ("empty", ""),
    ("unreachable_tokens", "zzq, zzq zzqzzq and zzq."),
    # U+180E is a format character now, no longer a space (PCRE2 10.42 still calls it one)
    ("mongolian_vowel_separator", " \n\r\u180e and a\u180e b \u180e  c\u180e\u180e\n \u180e"),
    # NFC composes these (and keeps the already composed, singletons mapped)
    ("decomposed", "Cafe\u0301 nai\u0308ve, A\u030angstro\u0308m \u212b, \u1100\u1161\u11a8 jamo, e\u0301\u0301 twice, "
                   "o\u0308\u0304 stacked, \u0344 split, Ca\u0301fe\u0301<|endoftext|>e\u0301"),
]


def byte_level_bpe(split_regex, text, vocab_size):
    tok = Tokenizer(models.BPE())
    if split_regex is None:
        tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False, use_regex=True)
    else:
        tok.pre_tokenizer = pre_tokenizers.Sequence([
            pre_tokenizers.Split(Regex(split_regex), behavior="isolated", invert=False),
            pre_tokenizers.ByteLevel(add_prefix_space=False, use_regex=False),
        ])
    tok.decoder = decoders.ByteLevel()
    tok.post_processor = processors.ByteLevel(trim_offsets=False)
    trainer = trainers.BpeTrainer(vocab_size=vocab_size, min_frequency=0, special_tokens=["<|endoftext|>"],
                                  initial_alphabet=pre_tokenizers.ByteLevel.alphabet(), show_progress=False)
    tok.train_from_iterator([text], trainer=trainer)
    return tok


def qwen2_variant(llama3):
    """llama3_512 with Qwen2's regex and normalizer, and merges of digits
    (which Llama 3's regex, keeping runs of up to 3, would make)."""
    spec = json.loads(llama3.to_str())
    spec["pre_tokenizer"]["pretokenizers"][0]["pattern"]["Regex"] = QWEN2
    spec["normalizer"] = {"type": "NFC"}
    spec["model"]["vocab"].update({"12": 512, "123": 513})
    spec["model"]["merges"] += [["1", "2"], ["12", "3"]]
    return Tokenizer.from_str(json.dumps(spec))


def add_llama3_variants(toks):
    """llama3_512 with ignore_merges (and two tokens no merge makes), with
    add_prefix_space, with NFC, and with Qwen2's regex."""
    spec = json.loads(toks["llama3_512"].to_str())
    spec["model"]["ignore_merges"] = True
    spec["model"]["vocab"]["zzq"] = 512
    spec["model"]["vocab"]["\u0120zzq"] = 513
    toks["llama3_512_ignore_merges"] = Tokenizer.from_str(json.dumps(spec))
    spec = json.loads(toks["llama3_512"].to_str())
    spec["pre_tokenizer"]["pretokenizers"][1]["add_prefix_space"] = True
    toks["llama3_512_prefix_space"] = Tokenizer.from_str(json.dumps(spec))
    spec = json.loads(toks["llama3_512"].to_str())
    spec["normalizer"] = {"type": "NFC"}
    toks["llama3_512_nfc"] = Tokenizer.from_str(json.dumps(spec))
    toks["llama3_512_qwen2"] = qwen2_variant(toks["llama3_512"])


# texts for the SentencePiece kind: its special tokens, spaces where the
# prefix ▁ is or is not put, and characters outside its vocabulary (bytes)
SP_CASES = [
    ("sp_specials", "<s>Hello there</s> and <unk> again<s></s>x</s>"),
    ("sp_spaces", "  two spaces first\n\nthen   three, a tab\tand a literal \u2581 mark \u2581\u2581 end "),
    ("sp_unknown", "\u03a9\u2248\u00e7\u221a\u222b \u65e5\u672c \U0001f642 \u2014 \u00abquotes\u00bb ~ ^ | \u00e9t\u00e9"),
    ("sp_special_first", "</s>Starts with a special token, then words"),
    ("sp_literal_first", "\u2581a literal mark first, then</s>\u2581after a special token"),
    ("sp_only_spaces", "   "),
]


def sentencepiece_bpe(text):
    """A SentencePiece BPE with byte fallback (the kind of Llama 2's,
    Mistral's and TinyLlama's tokenizer.model) trained by sentencepiece on
    `text`, made a tokenizer.json by transformers' LlamaTokenizerFast
    (legacy=False: a Metaspace pre-tokenizer, prepend_scheme first)."""
    import tempfile
    import sentencepiece as spm
    from transformers import LlamaTokenizerFast
    with tempfile.TemporaryDirectory() as d:
        spm.SentencePieceTrainer.train(
            sentence_iterator=iter(text.split("\n")), model_prefix=os.path.join(d, "sp"), vocab_size=1000,
            model_type="bpe", byte_fallback=True, split_digits=True, allow_whitespace_only_pieces=True,
            remove_extra_whitespaces=False, normalization_rule_name="identity", character_coverage=0.9995,
            num_threads=1, minloglevel=2)
        os.rename(os.path.join(d, "sp.model"), os.path.join(d, "tokenizer.model"))
        fast = LlamaTokenizerFast.from_pretrained(d, legacy=False)
        return Tokenizer.from_str(fast.backend_tokenizer.to_str())


def sentencepiece_variants(sp):
    """sp_1000 as written, and with the other ways a tokenizer.json says
    SentencePiece: prepend_scheme always (legacy=True), the Prepend and
    Replace normalizers without a pre-tokenizer (Llama 2's own file, from
    older transformers), a Metaspace that splits at every ▁, and first
    merges that join "d" and "e" to the ▁ after them (so that merges cross
    spaces there)."""
    toks = {"sp_1000": sp}
    spec = json.loads(sp.to_str())
    spec["pre_tokenizer"]["prepend_scheme"] = "always"
    toks["sp_1000_always"] = Tokenizer.from_str(json.dumps(spec))
    spec = json.loads(sp.to_str())
    spec["pre_tokenizer"] = None
    spec["normalizer"] = {"type": "Sequence", "normalizers": [
        {"type": "Prepend", "prepend": "\u2581"}, {"type": "Replace", "pattern": {"String": " "}, "content": "\u2581"}]}
    toks["sp_1000_legacy"] = Tokenizer.from_str(json.dumps(spec))
    spec = json.loads(sp.to_str())
    spec["pre_tokenizer"].update(prepend_scheme="always", split=True)
    toks["sp_1000_split"] = Tokenizer.from_str(json.dumps(spec))
    spec = json.loads(sp.to_str())
    spec["model"]["vocab"].update({"d\u2581": 1000, "e\u2581": 1001})
    spec["model"]["merges"][:0] = [["d", "\u2581"], ["e", "\u2581"]]
    toks["sp_1000_joined"] = Tokenizer.from_str(json.dumps(spec))
    return toks


def add_sentencepiece(text):
    """sp_1000.json, and every case's ids under it and its variants with
    what transformers decodes them to; the SentencePiece cases are added
    with every other tokenizer's ids too (from the committed files)."""
    path = os.path.join(OUT, "cases.json")
    with open(path, encoding="utf-8") as f:
        fixture = json.load(f)
    sp = sentencepiece_bpe(text[:100000])
    sp.save(os.path.join(OUT, "sp_1000.json"), pretty=True)
    sps = sentencepiece_variants(Tokenizer.from_file(os.path.join(OUT, "sp_1000.json")))
    toks = {name: Tokenizer.from_file(os.path.join(OUT, name + ".json"))
            for name in ("gpt2_1024", "llama3_512", "gpt2_spaces_300")}
    add_llama3_variants(toks)
    fixture["cases"] = [c for c in fixture["cases"] if not c["name"].startswith("sp_")]
    for name, s in SP_CASES:
        c = {"name": name, "text": s}
        for tname, tok in toks.items():
            c[tname] = case_ids(tname, tok, name, s)
        fixture["cases"].append(c)
    for c in fixture["cases"]:
        for tname, tok in sps.items():
            ids = tok.encode(c["text"], add_special_tokens=False).ids
            c[tname] = ids
            c[tname + "_decoded"] = tok.decode(ids, skip_special_tokens=False)
    fixture["sentencepiece_made_by"] = "sentencepiece {}, transformers {}, tokenizers {}".format(
        spm_version(), transformers_version(), tokenizers_version())
    with open(path, "w", encoding="utf-8") as f:
        json.dump(fixture, f, ensure_ascii=False, indent=1)
    print("sentencepiece: {} cases under {}".format(len(fixture["cases"]), ", ".join(sps)))


def spm_version():
    import sentencepiece
    return sentencepiece.__version__


def transformers_version():
    import transformers
    return transformers.__version__


def tokenizers_version():
    import tokenizers
    return tokenizers.__version__


def case_ids(tname, tok, name, s):
    ids = tok.encode(s, add_special_tokens=False).ids
    # prefix_space adds spaces, so decoding gives them back; NFC gives the composed text
    if tname in ("llama3_512_nfc", "llama3_512_qwen2"):
        assert tok.decode(ids, skip_special_tokens=False) == unicodedata.normalize("NFC", s), name
    elif tname != "llama3_512_prefix_space":
        assert tok.decode(ids, skip_special_tokens=False) == s, (tname, name)
    return ids


def add_qwen2():
    path = os.path.join(OUT, "cases.json")
    with open(path, encoding="utf-8") as f:
        fixture = json.load(f)
    tok = qwen2_variant(Tokenizer.from_file(os.path.join(OUT, "llama3_512.json")))
    for c in fixture["cases"]:
        c["llama3_512_qwen2"] = case_ids("llama3_512_qwen2", tok, c["name"], c["text"])
    spec = json.loads(tok.to_str())
    spec["pre_tokenizer"]["pretokenizers"][0]["pattern"]["Regex"] = LLAMA3
    runs = Tokenizer.from_str(json.dumps(spec))
    differ = sum(runs.encode(c["text"], add_special_tokens=False).ids != c["llama3_512_qwen2"]
                 for c in fixture["cases"])
    print(f"digits in runs (Llama 3's regex) would change the ids of {differ} of {len(fixture['cases'])} cases")
    with open(path, "w", encoding="utf-8") as f:
        json.dump(fixture, f, ensure_ascii=False, indent=1)


def added(*entries):
    """added_tokens entries from (content, id, special) triples."""
    return [{"id": i, "content": c, "single_word": False, "lstrip": False, "rstrip": False, "normalized": not sp,
             "special": sp} for c, i, sp in entries]


EOT = ("<|endoftext|>", 0, True)
ADDED_TEXTS = ["The<a> Theory<b><a>", "<pad><unused> The<|endoftext|>"]
REGEX_TEXTS = ["Hello world", "hello\n\nhi 0xBEEF cafe\u0301 42\n", "a\nab\nabc\x0b\x0c\r\n\u2028x\n",
               "AAAA aaaa A1b2 \u00e9\u00e9 xcxCxabxaBxhXHx baaaa"]
NFC_TEXTS = ["Cafe\u0301 nai\u0308ve, A\u030angstro\u0308m \u212b, e\u0301\u0301 twice", "The Theory of 42 things"]
# name, base fixture, fields set, texts
VARIANTS = [
    # added_tokens: tokenizers gives a text in model.vocab its vocab id, any
    # other the next free id in list order; the ids in the file are not read
    ("added_numbered", "gpt2_1024", {"added_tokens": added(EOT, ("<a>", 1024, False), ("<b>", 1025, True))},
     ADDED_TEXTS),
    ("added_in_vocab", "gpt2_1024", {"added_tokens": added(EOT, ("<a>", 1024, False), ("The", 344, False),
                                                           ("<b>", 1025, False))}, ADDED_TEXTS),
    ("added_repeated", "gpt2_1024", {"added_tokens": added(EOT, ("<a>", 1024, True), ("<a>", 1024, True),
                                                           ("<b>", 1025, False))}, ADDED_TEXTS),
    ("added_in_vocab_other_id", "gpt2_1024", {"added_tokens": added(EOT, ("The", 1024, False))}, ADDED_TEXTS),
    ("added_out_of_order", "gpt2_1024", {"added_tokens": added(EOT, ("<unused>", 1025, False),
                                                               ("<pad>", 1024, False))}, ADDED_TEXTS),
    ("added_repeated_other_id", "gpt2_1024", {"added_tokens": added(EOT, ("<a>", 1024, True), ("<a>", 1025, True))},
     ADDED_TEXTS),
    ("added_past_a_gap", "gpt2_1024", {"added_tokens": added(EOT, ("<a>", 1025, False))}, ADDED_TEXTS),
] + [
    # a Split regex as Oniguruma reads it, where PCRE2 reads the same text
    # otherwise: tessel rewrites these (onig.c) or refuses them
    ("regex_" + name, "llama3_512", {"pre_tokenizer.pretokenizers.0.pattern.Regex": regex}, REGEX_TEXTS)
    for name, regex in [
        ("hex", r"\h+|\H+"), ("hex_in_class", r"[\h]+|[^\h]+|[x\H]"), ("m_dot_all", r"(?m).+|\n"),
        ("m_group", r"(?im:h.)|(?i-m:h.)|."), ("anchors", r"^\w+|\w+$|\s+|."), ("vertical_tab", r"\v+|[\v]|."),
        ("at_most", r"\p{L}{,3}|."), ("isolated_option", r"a(?i)b|c|(x(?i)h)|."), ("comment", r"(?#^$\h)\w+|."),
        ("quote", r"\Q.\E|."), ("nested_class", r"[a[b]]+|."), ("intersection", r"[a-z&&[^x]]+|."),
        ("interval_plus", r"a{1,2}+|."), ("exact_optional", r"ba{2}?|."), ("extended", r"(?x) a b |."),
    ]
] + [
    # forms tokenizers encodes exactly as ones tessel reads
    ("dropout_zero", "gpt2_1024", {"model.dropout": 0.0}, NFC_TEXTS),
    ("dropout_null", "gpt2_1024", {"model.dropout": None}, NFC_TEXTS),
    ("sequence_empty", "gpt2_1024", {"normalizer": {"type": "Sequence", "normalizers": []}}, NFC_TEXTS),
    ("sequence_nfc", "llama3_512", {"normalizer": {"type": "Sequence", "normalizers": [{"type": "NFC"}]}}, NFC_TEXTS),
    ("sequence_nfc_nfkc", "llama3_512", {"normalizer": {"type": "Sequence", "normalizers": [
        {"type": "NFC"}, {"type": "NFKC"}]}}, NFC_TEXTS),
    ("dropout_tenth", "gpt2_1024", {"model.dropout": 0.1}, []),
]



def flagged(first_id, *entries):
    """added_tokens entries numbered from first_id, from (content, flags)
    pairs: flags a string of n (normalized), s (special), l (lstrip), r
    (rstrip), w (single_word)."""
    return [{"id": first_id + i, "content": c, "single_word": "w" in f, "lstrip": "l" in f, "rstrip": "r" in f,
             "normalized": "n" in f, "special": "s" in f} for i, (c, f) in enumerate(entries)]


# every combination of the flags, and contents that the normalizer changes
# (NFC composes e + U+0301), that overlap across the two passes (<ab> found
# in the normalized text, <abc> in the text as given), that hold a byte-level
# stand-in (Ġ, which the ByteLevel decoder makes a space) or a space (kept
# as written) or ▁ (a space to SentencePiece's decoder)
FLAGGED = [("<e\u0301>", "n"), ("<o\u0308>", ""), ("<ab>", "n"), ("<abc>", ""), ("<w>", "w"), ("<wn>", "wn"),
           ("<l>", "l"), ("<r>", "r"), ("<lr>", "lrn"), ("<lrw>", "lrws"), ("<s>", "s"), ("<sn>", "sn"),
           ("<n\u0303>", "sn"), ("\u0120<g>", ""), ("a b", "n"), ("<x\u2581y>", "n"), ("\n", "r")]
FLAGGED_PIECES = ["<e\u0301>", "<\u00e9>", "<o\u0308>", "<\u00f6>", "<ab>", "<abc>", "<w>", "<wn>", "<l>", "<r>",
                  "<lr>", "<lrw>", "<s>", "<sn>", "<n\u0303>", "<\u00f1>", "\u0120<g>", "a b", "<x\u2581y>",
                  "<|endoftext|>", "</s>", " ", "  ", "\t", "\n", "\u00a0", "\u3000", "a", "Z", "_", "7", "\u00b2",
                  "e\u0301", "\u00e9", "\u0301", "\u2581", "x", "the", " the", "world", ",", "-", "\u65e5",
                  "\U0001f642", "<", ">", "ab", "c"]
FLAGGED_TEXTS = ["x<e\u0301>y x<\u00e9>y x<o\u0308>y x<\u00f6>y", "x<abc>y <ab>c",
                 "a <w> b x<w> <w>y _<w> \u00e9<w> 1<w> \u00b2<w> \u0301<w> <w>",
                 "a  \t<l>  b a  <r> \n b a  <lr>  b <l><r> <l>", "  <l>x", "<r>  ", "<lrw> x<lrw> <lrw>",
                 "the<s> the <sn>the <n\u0303> <\u00f1>", "\u0120<g> \u0120<g>x", "a b  a bc", "<x\u2581y> <x y>",
                 "one\n\n  two \n", "<r> x <|endoftext|> </s>", ""]


def flagged_variants():
    """Added tokens of every flag combination on each kind of tokenizer
    tessel reads, with the texts above and seeded random ones."""
    bpe = {"normalizer": {"type": "NFC"}, "added_tokens": [{"id": 0, "content": "<|endoftext|>", "single_word": False,
           "lstrip": False, "rstrip": False, "normalized": False, "special": True}]}
    sp_specials = [{"id": i, "content": c, "single_word": False, "lstrip": False, "rstrip": False,
                    "normalized": False, "special": True} for i, c in enumerate(["<unk>", "<s>", "</s>"])]
    legacy = {"type": "Sequence", "normalizers": [{"type": "Prepend", "prepend": "\u2581"},
                                                   {"type": "Replace", "pattern": {"String": " "}, "content": "\u2581"}]}
    flagged_sp = [(c, f) for c, f in FLAGGED if c != "<s>"]  # sp_1000 has <s> in its vocabulary
    return [
        ("added_flags_nfc", "llama3_512", dict(bpe, added_tokens=bpe["added_tokens"] + flagged(512, *FLAGGED))),
        ("added_flags_gpt2", "gpt2_1024", {"added_tokens": bpe["added_tokens"] + flagged(1024, *FLAGGED)}),
        ("added_flags_prefix_space", "gpt2_1024", {"pre_tokenizer.add_prefix_space": True,
                                                   "added_tokens": bpe["added_tokens"] + flagged(1024, *FLAGGED)}),
        ("added_flags_sp", "sp_1000", {"added_tokens": sp_specials + flagged(1000, *flagged_sp)}),
        ("added_flags_sp_always", "sp_1000", {"pre_tokenizer.prepend_scheme": "always",
                                              "added_tokens": sp_specials + flagged(1000, *flagged_sp)}),
        ("added_flags_sp_legacy", "sp_1000", {"pre_tokenizer": None, "normalizer": legacy,
                                              "added_tokens": sp_specials + flagged(1000, *flagged_sp)}),
        ("added_flags_lowercase", "gpt2_1024", {"normalizer": {"type": "Lowercase"},
                                                "added_tokens": bpe["added_tokens"] + flagged(1024, *FLAGGED)}),
    ]


def random_texts(rng, count):
    return ["".join(rng.choice(FLAGGED_PIECES) for _ in range(rng.randrange(1, 24))) for _ in range(count)]


def random_ids(rng, tok, count):
    """Id sequences drawn from the whole vocabulary, and half of the draws
    from the added tokens and the tokens of one byte (so that sequences of
    bytes break off, and added tokens stand between them)."""
    size = tok.get_vocab_size()
    added = sorted(tok.get_added_tokens_decoder())
    single = [i for i in range(size) if len(tok.decode([i]).encode("utf-8")) == 1
              or tok.id_to_token(i).startswith("<0x") or tok.decode([i]) == "\ufffd"]
    out = []
    for _ in range(count):
        out.append([rng.choice(added + single) if rng.random() < 0.5 else rng.randrange(size)
                    for _ in range(rng.randrange(1, 12))])
    return out


def special_ids(rng, tok, count):
    """Id sequences a third of whose draws are special added tokens, a
    third tokens of one byte and other added tokens, the rest any: where
    skip_special_tokens leaves ids out, between bytes of one character
    and at the start (which SentencePiece's Strip decides)."""
    size = tok.get_vocab_size()
    added = tok.get_added_tokens_decoder()
    special = sorted(i for i, a in added.items() if a.special)
    other = sorted(i for i, a in added.items() if not a.special)
    other += [i for i in range(size) if len(tok.decode([i]).encode("utf-8")) == 1
              or tok.id_to_token(i).startswith("<0x") or tok.decode([i]) == "\ufffd"]
    return [[rng.choice(special) if r < 1 / 3 else rng.choice(other) if r < 2 / 3 else rng.randrange(size)
             for r in (rng.random() for _ in range(rng.randrange(1, 12)))] for _ in range(count)]


def set_path(spec, path, value):
    """spec with the field at the dotted path (list indices as numbers) set."""
    *parents, last = path.split(".")
    for key in parents:
        spec = spec[int(key)] if isinstance(spec, list) else spec[key]
    if isinstance(spec, list):
        spec[int(last)] = value
    else:
        spec[last] = value


# pieces of text for the pre-tokenizer variants: numbers, punctuation of
# several Unicode categories (and characters where tokenizers' tables are
# not today's Unicode: U+2E43 is punctuation since Unicode 8, U+111C9 no
# longer is, U+10D40 is a digit since Unicode 16), symbols, letters whose
# UTF-8 has bytes the ByteLevel alphabet writes as digits or punctuation
# (ò is C3 B2: "Ã²"), CJK, emoji, white space runs, code, the special token
MIXED_PIECES = [
    "0", "7", "42", "123", "2024", "12345678", "3.14159", "1,000,000", "007", "0x1F", "v1.2.3", "10%", "$99.99",
    "1e-9", "-5", ".", ",", "!", "?", "...", "!!", "?!", "--", "\u2014", "\u2013", "\u2026", "\u00ab", "\u00bb",
    "\u201c", "\u201d", "\u2018", "\u2019", "\u00bf", "\u00a1", "\u00a7", "\u00b6", "\u00b7", "\u3001", "\u3002",
    "\uff01", "\uff1f", "\uff08", "\uff09", "\u3010", "\u3011", "@", "#", "&", "*", "(", ")", "[", "]", "{", "}",
    "<", ">", "/", "\\", "|", "_", "~", "^", "`", "'", "\"", ":", ";", "+", "=", "-", "%", "$", "\u20ac", "\u00a9",
    "\u00b0", "\u00b1", "\u00d7", "\u2192", "\u2211", "\u2e43", "\U000111c9", "\u166d", "\U00010d40\U00010d41",
    "the", " the", "world", " Hello", "\u00c7a", "na\u00efve", "\u00fcber", "\u00f2", "\u03b2", "\u00b5", "\u03a9",
    "\u0436", "\u00f1", "\u00e9", "I'm", "DON'T", "\u65e5\u672c\u8a9e", "\u4e2d\u6587", "\ud55c\uad6d\uc5b4",
    "\u30ab\u30bf\u30ab\u30ca", "\u3072\u3089\u304c\u306a", "\U0001f642", "\U0001f44d\U0001f3fd",
    "\U0001f1eb\U0001f1f7", "\u0661\u0662\u0663", "\uff14\uff15\uff16", "\u00b2", "\u00b3", "\u00b9", "\u00bd",
    "\u00be", "\u216b", "\u2466", "\U0001d7d8", "\u07c1", " ", "  ", "   ", "\t", "\n", "\n\n", "\r\n", "\u3000",
    "\u00a0", "\u2028", " \n ", "def", "x**2", "==", "!=", "->", "::", "#include", "a_b", "f(x)", "[0]",
    "<|endoftext|>"]
PRETOK_TEXTS = [
    "In 1999 there were 12345678 people; pi is 3.14159, agent 007, the 42nd and 1,000,000th.",
    "Hello, world!! What?! \u00abQuoted\u00bb \u2014 \u201ccurly\u201d \u2018single\u2019 \u2026 \u00bfQu\u00e9? "
    "\u00a1S\u00ed! \u00a712 \u00b63 \u00b7 x\u00b7y (a) [b] {c} <d>",
    "\u65e5\u672c\u8a9e\u306e\u30c6\u30ad\u30b9\u30c8\u3001\u4e2d\u6587\u5b57\u7b26\u3002\ud55c\uad6d\uc5b4 "
    "\ud14d\uc2a4\ud2b8\uff01 \u30ab\u30bf\u30ab\u30ca \u3072\u3089\u304c\u306a123",
    "emoji \U0001f642\U0001f44d\U0001f3fd and \U0001f1eb\U0001f1f7 flags, zero\u200bwidth\u200djoiner",
    "white  space   runs\t\tand\n\n\nnewlines\r\n  \u3000ideographic\u00a0nbsp   \n",
    "unicode digits: \u0661\u0662\u0663 \u0661\u0662\u0663\u0664 \uff14\uff15\uff16 \u00b2\u00b3\u00b9 \u00bd\u00be "
    "\u216b \u2466 \U0001d7d8\U0001d7d9 \u07c1\u07c2 \U00010d40\U00010d41",
    "\u00c7a va? Tr\u00e8s bien, o\u00f9 est l'h\u00f4tel? \u03b2 \u00b5 \u00f2 \u00ff\u00b2 \u00bc",
    "def f(x):\n    return x**2 + 1  # square\n\tif a != b: print('\"quoted\"')\n",
    "tokens<|endoftext|>after 123<|endoftext|>456 and \u00ab<|endoftext|>\u00bb",
    "a\u2e43b a\U000111c9b a\u166db 1\u2e432",
    "I'm sure they'll say we'd've done it; don't you think? SHE'S HERE!",
    "!!!!!!!!?????.... 1234567890123 ------ ______ ~~~~",
    "ABCdef GHI-jkl_mno.pqr,stu, vwx, yz",
    "",
]


def byte_level(add_prefix_space=False, use_regex=False):
    return {"type": "ByteLevel", "add_prefix_space": add_prefix_space, "trim_offsets": True, "use_regex": use_regex}


def split(pattern, behavior="Isolated", invert=False, kind="Regex"):
    return {"type": "Split", "pattern": {kind: pattern}, "behavior": behavior, "invert": invert}


def sequence(*steps):
    return {"type": "Sequence", "pretokenizers": list(steps)}


def digits(individual):
    return {"type": "Digits", "individual_digits": individual}


def punctuation(behavior):
    return {"type": "Punctuation", "behavior": behavior}


BEHAVIORS = ["Removed", "Isolated", "MergedWithPrevious", "MergedWithNext", "Contiguous"]
# DeepSeek's regexes, as its tokenizer.json files split (llama.cpp lists the same)
DEEPSEEK_LETTERS = (
    "\\s?[A-Za-z\u00b5\u00c0-\u00d6\u00d8-\u00f6\u00f8-\u01ba\u01bc-\u01bf\u01c4-\u0293\u0295-\u02af\u0370-\u0373"
    "\u0376\u0377\u037b-\u037d\u037f\u0386\u0388-\u038a\u038c\u038e-\u03a1\u03a3-\u03f5\u03f7-\u0481\u048a-\u052f"
    "\u0531-\u0556\u10a0-\u10c5\u13a0-\u13f5\u13f8-\u13fd\u1c90-\u1cba\u1cbd-\u1cbf\u1d00-\u1d2b\u1d6b-\u1d77"
    "\u1d79-\u1d9a\u1e00-\u1f15\u1f18-\u1f1d\u1f20-\u1f45\u1f48-\u1f4d\u1f50-\u1f57\u1f59\u1f5b\u1f5d\u1f5f-\u1f7d"
    "\u1f80-\u1fb4\u1fb6-\u1fbc\u1fbe\u1fc2-\u1fc4\u1fc6-\u1fcc\u1fd0-\u1fd3\u1fd6-\u1fdb\u1fe0-\u1fec\u1ff2-\u1ff4"
    "\u1ff6-\u1ffc\u2102\u2107\u210a-\u2113\u2115\u2119-\u211d\u2124\u2126\u2128\u212a-\u212d\u212f-\u2134\u2139"
    "\u213c-\u213f\u2145-\u2149\u214e\u2183\u2184\u2c00-\u2c7b\u2c7e-\u2ce4\u2ceb-\u2cee\u2cf2\u2cf3\ua640-\ua66d"
    "\ua680-\ua69b\ua722-\ua76f\ua771-\ua787\ua78b-\ua78e\uab70-\uabbf\ufb00-\ufb06\ufb13-\ufb17\uff21-\uff3a"
    "\uff41-\uff5a\U00010400-\U0001044f\U000104b0-\U000104d3\U000104d8-\U000104fb\U00010c80-\U00010cb2"
    "\U00010cc0-\U00010cf2\U000118a0-\U000118df\U0001e900-\U0001e943]+")
DEEPSEEK_PUNCT = "\\s?[!-/:-~\uff01-\uff0f\uff1a-\uff5e\u2018-\u201f\u3000-\u3002]+"
DEEPSEEK_CJK = "[\u4e00-\u9fa5\u0800-\u4e00\uac00-\ud7ff]+"
DEEPSEEK_V3 = ("[!\"#$%&'()*+,\\-./:;<=>?@\\[\\\\\\]^_`{|}~][A-Za-z]+|[^\r\n\\p{L}\\p{P}\\p{S}]?[\\p{L}\\p{M}]+|"
               " ?[\\p{P}\\p{S}]+[\r\n]*|\\s*[\r\n]+|\\s+(?!\\S)|\\s+")
PRETOK_VARIANTS = [
    # StarCoder, StarCoder2, SantaCoder; and with add_prefix_space (a space before each piece Digits made)
    ("pretok_starcoder", sequence(digits(True), byte_level(use_regex=True))),
    ("pretok_starcoder_prefix_space", sequence(digits(True), byte_level(True, True))),
    # Falcon: the steps after ByteLevel see its alphabet (a space is "Ġ", ò is "Ã²" whose "²" is a digit)
    ("pretok_falcon", sequence(punctuation("Contiguous"), byte_level(use_regex=True), digits(False),
                               split("[0-9][0-9][0-9]"))),
    ("pretok_deepseek_llm", sequence(split("[\r\n]"), split(DEEPSEEK_LETTERS), split(DEEPSEEK_PUNCT),
                                     split("\\s+$"), split(DEEPSEEK_CJK), digits(True), byte_level())),
    ("pretok_deepseek_coder", sequence(split("[\r\n]"), split("\\s?\\p{L}+"), split("\\s?\\p{P}+"),
                                       split(DEEPSEEK_CJK), digits(True), byte_level())),
    ("pretok_deepseek_v3", sequence(split("\\p{N}{1,3}"), split("[\u4e00-\u9fa5\u3040-\u309f\u30a0-\u30ff]+"),
                                    split(DEEPSEEK_V3), byte_level())),
    # a Split, then ByteLevel's own regex over each of its pieces
    ("pretok_split_then_byte_level_regex", sequence(split(LLAMA3), byte_level(use_regex=True))),
    # steps after ByteLevel: a String "Ġ" (a space there) merged with the next piece; punctuation and digits
    # among the stand-ins of bytes ("«" is "Â«": C2 AB)
    ("pretok_byte_level_then_split", sequence(byte_level(use_regex=True), split("\u0120", "MergedWithNext",
                                                                                 kind="String"))),
    ("pretok_byte_level_then_classes", sequence(byte_level(True), punctuation("Isolated"), digits(True))),
    ("pretok_digits_runs", sequence(digits(False), byte_level())),
    ("pretok_nested_sequence", sequence(sequence(digits(True)), sequence(byte_level(use_regex=True)))),
] + [
    # every behavior, on white space runs and inverted (the text between them the delimiter)
    ("pretok_split_%s%s" % (b.lower(), "_inverted" if inv else ""), sequence(split("\\s+", b, inv), byte_level()))
    for b in BEHAVIORS for inv in (False, True) if (b, inv) != ("Isolated", False)
] + [
    # a regex that matches empty at every other place: tokenizers' find_iter keeps an empty match, but not one
    # right where the previous match ended, and those are delimiters the merging behaviors join
    ("pretok_empty_%s" % b.lower(), sequence(split("\\p{P}*", b), byte_level())) for b in BEHAVIORS[1:]
] + [
    ("pretok_lookahead_merged_with_next", sequence(split("(?=\\p{Lu})|\\p{P}+", "MergedWithNext"), byte_level())),
    ("pretok_string_merged_with_previous", sequence(split(" ", "MergedWithPrevious", kind="String"), byte_level())),
    ("pretok_string_empty_contiguous", sequence(split("", "Contiguous", kind="String"), byte_level())),
] + [
    ("pretok_punctuation_%s" % b.lower(), sequence(punctuation(b), byte_level())) for b in BEHAVIORS
] + [
    # refused, the step named (no texts: tokenizers itself encodes some of them otherwise than a byte-level BPE)
    ("pretok_whitespace_step", sequence(digits(True), {"type": "WhitespaceSplit"}, byte_level())),
    ("pretok_two_byte_levels", sequence(byte_level(use_regex=True), byte_level())),
    ("pretok_no_byte_level", sequence(digits(True))),
]
PRETOK_REFUSED = {"pretok_whitespace_step", "pretok_two_byte_levels", "pretok_no_byte_level"}


def mixed_texts(rng, count, most):
    return ["".join(rng.choice(MIXED_PIECES) for _ in range(rng.randrange(1, most))) for _ in range(count)]


def unsplit_bpe(text):
    """unsplit_1000.json: a byte-level BPE whose ByteLevel has no regex,
    trained on chunks of tinyshakespeare and of seeded mixed text."""
    import random
    rng = random.Random(20250103)
    chunks = [text[i:i + 240] for i in range(0, 60000, 240)] + mixed_texts(rng, 600, 30)
    tok = Tokenizer(models.BPE())
    tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False, use_regex=False)
    tok.decoder = decoders.ByteLevel()
    tok.post_processor = processors.ByteLevel(trim_offsets=False)
    trainer = trainers.BpeTrainer(vocab_size=1000, min_frequency=0, special_tokens=["<|endoftext|>"],
                                  initial_alphabet=pre_tokenizers.ByteLevel.alphabet(), show_progress=False)
    tok.train_from_iterator(chunks, trainer=trainer)
    tok.save(os.path.join(OUT, "unsplit_1000.json"), pretty=True)
    print("unsplit_1000.json:", tok.get_vocab_size(), "tokens")


def compact_dump(obj, f):
    """obj as indented JSON, but each list of numbers on one line."""
    lists = []

    def mark(o):
        if isinstance(o, dict):
            return {k: mark(v) for k, v in o.items()}
        if isinstance(o, list) and o and all(isinstance(x, int) for x in o):
            lists.append(json.dumps(o, separators=(",", ":")))
            return "\x00%d\x00" % (len(lists) - 1)
        return [mark(x) for x in o] if isinstance(o, list) else o
    text = json.dumps(mark(obj), ensure_ascii=False, indent=1)
    f.write(re.sub(r'"\\u0000(\d+)\\u0000"', lambda m: lists[int(m.group(1))], text))


def uses_regex(pt):
    """Whether a pre-tokenizer has a regex: a Split's, or ByteLevel's own."""
    steps = pt.get("pretokenizers", [pt])
    return any(uses_regex(s) if s["type"] == "Sequence" else "Regex" in s.get("pattern", {}) or s.get("use_regex")
               for s in steps)


def add_pretok_cases():
    """pretok_cases.json: the pre-tokenizer variants of unsplit_1000, with
    PRETOK_TEXTS and 40 seeded random texts each (less, under a regex, those
    with a character Unicode 14 had not assigned: PCRE2 10.42's tables know
    no class for it, which the README says); and how many variants give
    other ids than unsplit_1000 itself and than the variant before them
    (what a pre-tokenizer cut otherwise would change)."""
    import random
    import tokenizers
    rng = random.Random(20250104)
    texts = PRETOK_TEXTS + mixed_texts(rng, 40, 24)
    assert unicodedata.unidata_version == "14.0.0", "PCRE2 10.42's Unicode"
    known = [t for t in texts if all(unicodedata.category(c) != "Cn" for c in t)]
    variants, previous = [], None
    for name, pt in PRETOK_VARIANTS:
        some = [] if name in PRETOK_REFUSED else known if uses_regex(pt) else texts
        tok, v = variant_cases(name, "unsplit_1000", {"pre_tokenizer": pt}, some)
        for c in v["texts"]:
            if "Removed" not in json.dumps(pt) and "prefix_space" not in name and "classes" not in name:
                assert tok.decode(c["ids"], skip_special_tokens=False) == c["text"], (name, c["text"])
        if v["texts"]:
            _, plain = variant_cases("unsplit", "unsplit_1000", {}, some)
            same = sum(a["ids"] == b["ids"] for a, b in zip(v["texts"], plain["texts"]))
            near = sum(a["ids"] == b["ids"] for a, b in zip(v["texts"], previous["texts"])) if previous else 0
            print(f"{name}: ids as unsplit_1000's in {same} of {len(some)} texts, as the variant before's in {near}")
            previous = v
        variants.append(v)
    with open(os.path.join(OUT, "pretok_cases.json"), "w", encoding="utf-8") as f:
        compact_dump({"made_by": "tokenizers " + tokenizers.__version__, "variants": variants}, f)
    print(f"pretok_cases.json: {len(variants)} variants")


def char_class(pre_tokenizer):
    """The code points pre_tokenizer cuts out as pieces of their own from
    between two letters a."""
    cps = [c for c in range(0x110000) if not 0xD800 <= c < 0xE000]
    pieces = pre_tokenizer.pre_tokenize_str("".join("a" + chr(c) for c in cps) + "a")
    return sorted(ord(p) for p, _ in pieces if len(p) == 1 and p != "a")


def char_classes():
    """char_classes.json, and the C tables of charclass.c on standard output."""
    import tokenizers
    ranges = {}
    for name, pt in (("punctuation", pre_tokenizers.Punctuation("isolated")),
                     ("numeric", pre_tokenizers.Digits(individual_digits=True))):
        rs = []
        for c in char_class(pt):
            if rs and rs[-1][1] == c - 1:
                rs[-1][1] = c
            else:
                rs.append([c, c])
        ranges[name] = rs
        cells = ["{0x%x, 0x%x}," % (a, b) for a, b in rs]
        lines, line = [], "   "
        for cell in cells:
            if len(line) + 1 + len(cell) > 120:
                lines.append(line)
                line = "   "
            line += " " + cell
        print("static const range %s[] = {\n%s\n};" % (name, "\n".join(lines + [line])))
    with open(os.path.join(OUT, "char_classes.json"), "w", encoding="utf-8") as f:
        compact_dump(dict(made_by="tokenizers " + tokenizers.__version__, **ranges), f)


def variant_cases(name, base, fields, texts):
    """One variant: the base fixture with its fields set, the ids
    tokenizers gives its added tokens, and its ids for the texts."""
    with open(os.path.join(OUT, base + ".json"), encoding="utf-8") as f:
        spec = json.load(f)
    for path, value in fields.items():
        set_path(spec, path, value)
    tok = Tokenizer.from_str(json.dumps(spec))
    v = {"name": name, "base": base, "set": fields,
         "added_ids": [tok.token_to_id(a["content"]) for a in spec.get("added_tokens") or []],
         "texts": [{"text": t, "ids": tok.encode(t, add_special_tokens=False).ids} for t in texts]}
    return tok, v


def add_json_cases():
    """json_cases.json: every variant's texts and ids; for the flagged ones
    also seeded random texts, what tokenizers decodes their ids to, and
    seeded random id sequences with their decoded text. pretok_cases.json:
    the pre-tokenizer variants."""
    import random
    import tokenizers
    variants = []
    rng = random.Random(20250101)
    special_rng = random.Random(20250102)  # apart, so that the sequences drawn from rng stay as they were
    flagged_names = set()
    for name, base, fields in flagged_variants():
        flagged_names.add(name)
        VARIANTS.append((name, base, fields, FLAGGED_TEXTS + random_texts(rng, 40)))
    for name, base, fields, texts in VARIANTS:
        tok, v = variant_cases(name, base, fields, texts)
        if name in flagged_names:
            for c in v["texts"]:
                c["decoded"] = tok.decode(c["ids"], skip_special_tokens=False)
            v["decodes"] = [{"ids": ids, "text": tok.decode(ids, skip_special_tokens=False),
                             "text_skip_special": tok.decode(ids, skip_special_tokens=True)}
                            for ids in random_ids(rng, tok, 60) + special_ids(special_rng, tok, 40)]
        variants.append(v)
    with open(os.path.join(OUT, "json_cases.json"), "w", encoding="utf-8") as f:
        json.dump({"made_by": "tokenizers " + tokenizers.__version__, "variants": variants}, f, ensure_ascii=False,
                  indent=1)
    print(f"json_cases.json: {len(variants)} variants")
    add_pretok_cases()


def main():
    import tokenizers
    if sys.argv[1:] == ["qwen2"]:
        return add_qwen2()
    if sys.argv[1:] == ["json"]:
        return add_json_cases()
    if sys.argv[1:] == ["classes"]:
        return char_classes()
    with open(DATA, encoding="utf-8") as f:
        text = f.read()
    if sys.argv[1:] == ["unsplit"]:
        return unsplit_bpe(text)
    if sys.argv[1:] == ["sentencepiece"]:
        return add_sentencepiece(text)
    os.makedirs(OUT, exist_ok=True)
    toks = {
        "gpt2_1024": byte_level_bpe(None, text[:300000], 1024),
        "llama3_512": byte_level_bpe(LLAMA3, text[:100000], 512),
        "gpt2_spaces_300": byte_level_bpe(None, text[:40000].replace("\n", " \n\r  "), 300),
    }
    for name, tok in toks.items():
        tok.save(os.path.join(OUT, name + ".json"), pretty=True)
    add_llama3_variants(toks)
    cases = []
    for name, s in CASES:
        c = {"name": name, "text": s}
        if unicodedata.normalize("NFC", s) != s:
            c["text_nfc"] = unicodedata.normalize("NFC", s)
        for tname, tok in toks.items():
            c[tname] = case_ids(tname, tok, name, s)
        cases.append(c)
    differ = sum(c["llama3_512"] != c["llama3_512_ignore_merges"] for c in cases)
    print(f"ignore_merges changes the ids of {differ} of {len(cases)} cases")
    with open(os.path.join(OUT, "cases.json"), "w", encoding="utf-8") as f:
        json.dump({"made_by": "tokenizers " + tokenizers.__version__, "cases": cases}, f, ensure_ascii=False, indent=1)
    whole = byte_level_bpe(None, text, 1024)
    counts = {"made_by": "tokenizers " + tokenizers.__version__, "text": "tinyshakespeare.txt",
              "bytes": len(text.encode("utf-8")), "vocab_size": 1024, "special": ["<|endoftext|>"],
              "tokens": len(whole.encode(text, add_special_tokens=False).ids),
              "merges": len(json.loads(whole.to_str())["model"]["merges"])}
    with open(os.path.join(OUT, "counts.json"), "w") as f:
        json.dump(counts, f, indent=1)
    print("wrote", OUT, counts)


if __name__ == "__main__":
    sys.exit(main())
