"""Facts about a PR description, parsed from its Markdown text (regexes are for prose, as here)."""
from __future__ import annotations

import re
from ..model import field, record

# Words that claim a speed effect. Op names are not claims: "fused", "fusion" name kernels (fused_moe).
PERF_WORDS = re.compile(r"\b(perf(ormance)?|optimi[sz](e|ed|es|ation)|speed[- ]?ups?|faster|quicker|latency|throughput|"
                        r"tflops|bandwidth)\b", re.IGNORECASE)
# Hardware and dtype tokens whose digits are not measurements (MI300, gfx942, fp8, 8x MI355X).
NOT_A_NUMBER = re.compile(r"\b(\d+\s*[x×]\s*(?=(MI|gfx|GPU|node|card|rank|device|CU)\w*)|MI\d+\w*|gfx\d+\w*|"
                          r"fp\d+|bf\d+|int\d+|e\dm\d\w*|mxfp\d+|TP\s*=?\s*\d+|EP\s*=?\s*\d+)", re.IGNORECASE)
MEASUREMENT = re.compile(r"(?<![\w.])(\d+(?:\.\d+)?)\s*(x|×|%|us|µs|ms|s\b|tflops?|gb/s|tok/s|tokens/s|req/s)",
                         re.IGNORECASE)
RATIO = re.compile(r"(?<![\w.])(\d+\.\d+|\d+)\s*[x×](?![\w])", re.IGNORECASE)
IMAGE = re.compile(r"!\[[^\]]*\]\([^)]*\)|<img\b", re.IGNORECASE)
AI_FOOTER = re.compile(r"(generated (with|by) \[?(claude|chatgpt|copilot|cursor|codex|gemini)|"
                       r"co-authored-by:\s*(claude|copilot|chatgpt|cursor)|🤖\s*generated)", re.IGNORECASE)
HEADING = re.compile(r"^\s{0,3}(#{1,6})\s+(.+?)\s*#*\s*$")
TEST_SECTIONS = re.compile(r"\btest(ing)?\s*(plan|result|results)\b", re.IGNORECASE)
HTML_COMMENT = re.compile(r"<!--.*?-->", re.DOTALL)
ACCURACY = re.compile(r"\b(gsm8k|mmlu|accuracy|acc\b|ppl|perplexity|lm[_-]eval)", re.IGNORECASE)


@record
class Body:
    text: str
    sections: dict[str, str] = field(default_factory=dict)  # heading → content (comments kept)

    @classmethod
    def parse(cls, text: str) -> "Body":
        body = cls(text or "")
        current, lines = None, []
        for line in body.text.splitlines():
            match = HEADING.match(line)
            if match:
                if current is not None:
                    body.sections[current] = "\n".join(lines)
                current, lines = match.group(2).strip(), []
            elif current is not None:
                lines.append(line)
        if current is not None:
            body.sections[current] = "\n".join(lines)
        return body

    def prose(self) -> str:
        return HTML_COMMENT.sub("", self.text)

    def measurements(self) -> list[str]:
        """Numbers followed by a perf unit, outside HTML comments, hardware names and accuracy lines."""
        out = []
        for line in self.prose().splitlines():
            if ACCURACY.search(line):
                continue
            cleaned = NOT_A_NUMBER.sub(" ", line)
            out += [m.group(0) for m in MEASUREMENT.finditer(cleaned)]
        return out

    def ratios(self) -> list[str]:
        out = []
        for line in self.prose().splitlines():
            cleaned = NOT_A_NUMBER.sub(" ", line)
            out += [m.group(1) for m in RATIO.finditer(cleaned)]
        return out

    def empty_test_sections(self) -> list[str]:
        return [heading for heading, content in self.sections.items()
                if TEST_SECTIONS.search(heading) and not HTML_COMMENT.sub("", content).strip()]


def claims_perf(title: str, body: Body) -> str | None:
    match = PERF_WORDS.search(title) or PERF_WORDS.search(body.prose())
    return match.group(0) if match else None
