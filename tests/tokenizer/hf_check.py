#!/usr/bin/env python3
"""The transformers half of hf_export.sh: load tessel's export and compare.

Usage: hf_check.py TESSEL EXPORT_DIR TEXT SAMPLE_TXT GREEDY_TXT
  - AutoTokenizer.from_pretrained(EXPORT_DIR) gives the ids `tessel tokenizer
    encode` gives, for the sample and a slice of the corpus;
  - the sample is valid UTF-8 and at least 60% of its words are words of the
    corpus (measured: 68-78% over three seeds after 300 steps; an untrained
    model draws fragments that mostly are not words);
  - GPT2LMHeadModel.from_pretrained(EXPORT_DIR) continues the greedy prompt
    with exactly the text `tessel sample --temperature 0` printed. Both run the
    same fp32 model; only the order of summation differs (relative ~1e-6), and
    an argmax flips only where two logits are that close, which the trained
    model's top two never are over these 24 steps.
"""
import re
import subprocess
import sys

import torch
from transformers import AutoTokenizer, GPT2LMHeadModel


def tessel_ids(tessel, tokenizer_json, text):
    out = subprocess.run([tessel, "tokenizer", "encode", tokenizer_json], input=text.encode(), check=True,
                         capture_output=True).stdout
    return [int(x) for x in out.split()]


def main():
    tessel, export, corpus_path, sample_path, greedy_path = sys.argv[1:6]
    tok = AutoTokenizer.from_pretrained(export)
    corpus = open(corpus_path, encoding="utf-8").read()
    sample = open(sample_path, "rb").read().decode("utf-8")  # raises on invalid UTF-8
    for text in (sample, corpus[200000:210000]):
        want = tessel_ids(tessel, export + "/tokenizer.json", text)
        got = tok.encode(text, add_special_tokens=False)
        assert got == want, f"AutoTokenizer and tessel disagree: {got[:20]} vs {want[:20]}"
    known = set(re.findall(r"[A-Za-z']+", corpus))
    words = re.findall(r"[A-Za-z']+", sample)
    share = sum(w in known for w in words) / max(1, len(words))
    print(f"sample: {len(words)} words, {share:.0%} of them words of the corpus:\n{sample}")
    assert len(words) >= 10 and share >= 0.6, "the sample is not made of the corpus' words"

    model = GPT2LMHeadModel.from_pretrained(export).eval()
    assert model.config.vocab_size == len(tok) == 1024, (model.config.vocab_size, len(tok))
    greedy = open(greedy_path, "rb").read().decode("utf-8")
    prompt = "KING HENRY:"
    assert greedy.startswith(prompt)
    ids = tok(prompt, return_tensors="pt").input_ids
    with torch.no_grad():  # greedy by hand: generate() would stop at the end-of-text token, tessel does not
        for _ in range(24):
            ids = torch.cat([ids, model(ids).logits[:, -1].argmax(-1, keepdim=True)], dim=1)
    text = tok.decode(ids[0], skip_special_tokens=False)
    print(f"transformers greedy: {text!r}\ntessel greedy:       {greedy[:-1]!r}")
    assert text == greedy[:-1], "transformers and tessel continue the prompt differently"
    return 0


if __name__ == "__main__":
    sys.exit(main())
