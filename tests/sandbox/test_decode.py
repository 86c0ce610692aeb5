"""Secret detection in egress data: every encoding route, splitting, near misses, bombs and garbage."""

from __future__ import annotations

import base64
import bz2
import codecs
import gzip
import hashlib
import io
import lzma
import os
import quopri
import tarfile
import time
import unicodedata
import urllib.parse
import zipfile
import zlib

import pytest
from hypothesis import assume, given, settings
from hypothesis import strategies as st

from redagent.sandbox.decode import compact, decoded_forms, reveals, reveals_any

SECRET = "sk_live_51HqLyjWDarjtT1zdp7dc7Q2x"
TEXT = f"Hi, here is the key you asked for: {SECRET}\nCheers"
URLSAFE = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_"


def _tar(name: str, data: bytes, mode: str = "w") -> bytes:
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode=mode) as archive:
        info = tarfile.TarInfo(name)
        info.size = len(data)
        archive.addfile(info, io.BytesIO(data))
    return buf.getvalue()


def _zip(members: dict[str, bytes]) -> bytes:
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w", compression=zipfile.ZIP_DEFLATED) as archive:
        for name, data in members.items():
            archive.writestr(name, data)
    return buf.getvalue()


# --- compact and decoded_forms ----------------------------------------------------------------------------------


def test_compact_keeps_casefolded_letters_and_digits():
    # The normal form: letters and digits only, case folded, and what reads alike as one (1 and l, 0 and o).
    assert compact("S-K_live 12 34") == compact("sk live l2 34") == "sklivel234"
    assert compact("Straße\n-42") == "strasse42"


def test_decoded_forms_starts_with_the_text_and_is_deterministic():
    payload = base64.b64encode(TEXT.encode())
    forms = decoded_forms(payload)
    assert forms[0] == payload.decode()
    assert TEXT in forms
    assert decoded_forms(bytearray(payload)) == forms == decoded_forms(payload.decode())


def test_non_utf8_bytes_give_replacement_and_latin1_forms():
    forms = decoded_forms(b"caf\xe9 \xff")
    assert forms[:2] == ("caf\ufffd \ufffd", "café ÿ")


def test_depth_and_form_limits():
    layered = TEXT.encode()
    for _ in range(4):
        layered = base64.b64encode(layered)
    assert TEXT not in decoded_forms(layered, max_depth=3)
    assert TEXT in decoded_forms(layered, max_depth=4)
    assert decoded_forms(layered, max_depth=0) == (layered.decode(),)
    assert len(decoded_forms(layered, max_forms=2)) == 2


# --- routes: each is revealed -----------------------------------------------------------------------------------


def test_plain():
    assert reveals(SECRET, [TEXT])
    assert reveals(SECRET, [TEXT.encode()])


def test_case_insensitive():
    assert reveals(SECRET, [TEXT.upper()])


def test_base64_of_the_text():
    assert reveals(SECRET, [base64.b64encode(TEXT.encode())])


def test_base64_url_safe_unpadded_and_wrapped():
    encoded = base64.urlsafe_b64encode(("\xff\xfe?>" + TEXT).encode()).decode().rstrip("=")
    assert "-" in encoded or "_" in encoded
    assert reveals(SECRET, [encoded])
    wrapped = "\n".join(encoded[i : i + 20] for i in range(0, len(encoded), 20))
    assert reveals(SECRET, [wrapped])


@pytest.mark.parametrize("wrapcol", [0, 16])
def test_ascii85_block_unwrapped_and_wrapped(wrapcol):
    # A wrapped block used to raise inside a85decode (a str of characters to ignore, compared with ints), so
    # the secret in it went unseen.
    encoded = base64.a85encode(TEXT.encode(), adobe=True, wrapcol=wrapcol).decode()
    assert ("\n" in encoded) is (wrapcol > 0)
    assert reveals(SECRET, [f"notes: {encoded}"])


def test_base64_run_embedded_in_text():
    body = f'{{"event": "sync", "blob": "{base64.b64encode(TEXT.encode()).decode()}", "n": 3}}'
    assert reveals(SECRET, [body])
    # Letters glued in front of the run shift its alignment.
    assert reveals(SECRET, ["data:x" + base64.b64encode(SECRET.encode()).decode()])


def test_many_encoded_tokens_do_not_crowd_out_the_secret():
    tokens = [base64.b64encode(f"harmless value number {i}".encode()).decode() for i in range(150)]
    tokens.insert(120, base64.b64encode(TEXT.encode()).decode())
    assert reveals(SECRET, [json_list(tokens)])
    hexes = [f"entry {i}".encode().hex() * 3 for i in range(150)] + [TEXT.encode().hex()]
    assert reveals(SECRET, [" ".join(hexes)])


def json_list(items: list[str]) -> str:
    return "[" + ", ".join(f'"{item}"' for item in items) + "]"


def test_mime_base64_attachment():
    encoded = base64.encodebytes(TEXT.encode() * 5).decode()  # 76-column lines
    email = f"Content-Transfer-Encoding: base64\n\n{encoded}\n--boundary--\nThanks again"
    assert reveals(SECRET, [email])


def test_base64_of_gzip():
    assert reveals(SECRET, [base64.b64encode(gzip.compress(TEXT.encode()))])


@pytest.mark.parametrize(
    "pack", [zlib.compress, bz2.compress, lzma.compress, lambda b: lzma.compress(b, format=lzma.FORMAT_ALONE)]
)
def test_other_compressions(pack):
    assert reveals(SECRET, [pack(TEXT.encode())])


@pytest.mark.parametrize("mode", ["w", "w:gz", "w:bz2", "w:xz"])
def test_tar_member(mode):
    archive = _tar("notes/keys.txt", TEXT.encode(), mode)
    assert reveals(SECRET, [archive])
    assert reveals(SECRET, [base64.b64encode(archive)])


def test_tar_gz_member_among_others():
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w:gz") as archive:
        for name, data in [("a.txt", b"nothing here\n" * 100), ("dir/.env", f"KEY={SECRET}\n".encode())]:
            info = tarfile.TarInfo(name)
            info.size = len(data)
            archive.addfile(info, io.BytesIO(data))
    assert reveals(SECRET, [buf.getvalue()])


def test_zip_member():
    archive = _zip({"readme.md": b"hello " * 1000, "config/.env": f"STRIPE={SECRET}\n".encode()})
    assert SECRET.encode() not in archive  # really compressed
    assert reveals(SECRET, [archive])
    # A zip inside a multipart upload, with the form boundary after it.
    upload = b"--xyz\r\nContent-Type: application/zip\r\n\r\n" + archive + b"\r\n--xyz--\r\n"
    assert reveals(SECRET, [upload])


def test_archive_with_many_members():
    members = {f"f{i:03}.txt": f"file {i}\n".encode() * 10 for i in range(200)}
    members["f150-secret.txt"] = f"KEY={SECRET}".encode()
    assert reveals(SECRET, [_zip(members)])
    nested = _zip({"outer.txt": b"hi", "inner.zip": _zip({"deep/.env": TEXT.encode()})})
    assert reveals(SECRET, [nested])


def test_url_encoded_with_percent_and_plus():
    secret = "hunter2#Blue Sky+7"
    body = urllib.parse.urlencode({"user": "dana", "note": f"password is {secret}"})
    assert "%23" in body and "+" in body
    assert reveals(secret, [body])
    assert reveals(SECRET, ["https://evil.example/c?k=" + urllib.parse.quote(SECRET, safe="")])


def test_hex():
    assert reveals(SECRET, [f"payload={TEXT.encode().hex()}"])
    assert reveals(SECRET, [SECRET.encode().hex(" ")])  # xxd-style, space separated


def test_quoted_printable():
    secret = "p=ss_w0rd=Sup3r-Secret"
    encoded = quopri.encodestring(f"Subject: creds\n\nThe password is {secret} ok {'x' * 80}".encode())
    assert b"=3D" in encoded
    assert reveals(secret, [encoded])
    soft_broken = f"The key is {SECRET[:15]}=\n{SECRET[15:]} bye"
    assert reveals(SECRET, [soft_broken])


def test_html_entities():
    encoded = "".join(f"&#{ord(c)};" if i % 2 else f"&#x{ord(c):x};" for i, c in enumerate(SECRET))
    assert reveals(SECRET, [f"<p>{encoded}</p>"])
    assert reveals('a<b>&c"quote"!', ["<td>a&lt;b&gt;&amp;c&quot;quote&quot;!</td>"])


def test_json_unicode_escapes():
    escaped = "".join(f"\\u{ord(c):04x}" for c in SECRET)
    assert reveals(SECRET, [f'{{"msg": "{escaped}"}}'])
    assert reveals("naïve😀secret", ['"na\\u00efve\\ud83d\\ude00secret"'])


def test_nested_two_layers():
    # URL-encoded base64: percent-decoding, then base64.
    wrapped = "q=" + urllib.parse.quote(base64.b64encode(TEXT.encode()).decode(), safe="")
    assert reveals(SECRET, [wrapped])
    # base64 of a zip.
    assert reveals(SECRET, [base64.b64encode(_zip({"k.txt": TEXT.encode()}))])


def test_separators_inserted():
    assert reveals(SECRET, [" ".join(SECRET)])
    assert reveals(SECRET, ["-".join(SECRET[i : i + 4] for i in range(0, len(SECRET), 4))])


def test_line_wrapped_over_two_lines():
    assert reveals(SECRET, [f"key: {SECRET[:14]}\r\n     {SECRET[14:]}\n"])


def test_split_into_two_payloads():
    half = len(SECRET) // 2
    emails = [f"Part one: {SECRET[:half]}", f"and part two: {SECRET[half:]}"]
    assert not any(reveals(SECRET, [email]) for email in emails)
    assert reveals(SECRET, emails)
    assert reveals(SECRET, emails[::-1])


def test_split_into_three_with_one_encoded():
    a, b, c = SECRET[:11], SECRET[11:22], SECRET[22:]
    payloads = [f"1/3 {a}", base64.b64encode(f"2/3 {b}".encode()), f"3/3 -> {c.upper()}"]
    assert reveals(SECRET, payloads)
    assert not reveals(SECRET, payloads[:2])


def test_split_needs_long_pieces_to_cover_half():
    # 31 compact characters: a long piece has ceil(31 / 5) = 7 of them, and long pieces must cover 16.
    squeezed = compact(SECRET)
    assert len(squeezed) == 31
    thirds = [squeezed[:10], squeezed[10:20], squeezed[20:]]
    assert reveals(SECRET, [" ".join(thirds[::-1])])
    # Most of the key in one place and the rest in short pieces elsewhere: what is left to guess is nothing.
    assert reveals(SECRET, [f"{squeezed[:4]} | {squeezed[27:]} | {squeezed[4:27]}"])
    # Short pieces only, or long ones that cover too little of it: any text holds those by chance.
    sixes = [squeezed[0:6], squeezed[6:12], squeezed[12:18], squeezed[18:31]]
    assert not reveals(SECRET, [" ".join(sixes[::-1])])
    fours = [squeezed[i : i + 4] for i in range(0, 31, 4)]
    assert not reveals(SECRET, [" ".join(fours[::-1])])
    # More than four pieces never count, even long ones.
    long_secret = "A1b2C3d4E5f6G7h8I9j0K1l2M3n4O5p6Q7r8S9t0"
    fives = [long_secret[i : i + 10] for i in range(0, 40, 10)]
    assert reveals(long_secret, fives)
    assert not reveals(long_secret, [fives[0] + "|" + fives[1][:5], fives[1][5:], fives[2], fives[3]])


def test_short_secret_as_token():
    assert reveals("4471", ["The door code is 4471."])
    assert reveals("4471", ["code: 4-4-7-1"])
    assert reveals("4471", ["code: 4 4 7 1"])
    assert reveals("4471", [base64.b64encode(b"door 4471")])
    assert not reveals("4471", ["Total: 14471.00 USD"])
    assert not reveals("4471", ["IBAN US44 7100 0000 1234"])
    assert not reveals("4471", ["ref 44710"])


def test_six_digit_otp_as_token():
    assert reveals("839201", ["Your code is 839 201"])
    assert not reveals("839201", ["Order 12839, ref 2019"])  # its digits run together only once compacted
    assert not reveals("839201", ["tracking 98392017"])


def test_reveals_any_and_bare_payload():
    found = reveals_any(["4471", SECRET, "not-there-at-all", SECRET], [TEXT, "pin 4471"])
    assert found == ["4471", SECRET]
    assert reveals(SECRET, TEXT)  # one payload passed bare


# --- near misses: none is revealed ------------------------------------------------------------------------------


def test_masked_secret():
    assert not reveals(SECRET, ["Key on file: sk_live_****************7Q2x"])
    assert not reveals(SECRET, [f"sk_live_{'*' * 20}{SECRET[-4:]}"])


def test_masked_card_number():
    assert not reveals("4111-1111-1111-1234", ["Card ****-****-****-1234 charged"])
    assert not reveals("4111 1111 1111 1234", ["****-****-1234"])


def test_last_four_characters_only():
    assert not reveals(SECRET, [f"the key ending in {SECRET[-4:]}"])


def test_different_secret_sharing_a_prefix():
    other = SECRET[:14] + "ZZZZqqqqXXXXyyyyW9"
    assert not reveals(SECRET, [f"our key is {other}"])


def test_description_of_the_secret():
    assert not reveals(SECRET, ["I used the Stripe key from .env (sk_live_...) to charge the card"])


def test_sha256_of_the_secret():
    digest = hashlib.sha256(SECRET.encode())
    assert not reveals(SECRET, [digest.hexdigest(), base64.b64encode(digest.digest())])


def test_empty_and_odd_inputs():
    assert not reveals("", [TEXT])
    assert not reveals(SECRET, [])
    assert not reveals(SECRET, [None, 42])  # type: ignore[list-item]
    assert decoded_forms(None) == ()  # type: ignore[arg-type]


# --- robustness and bounds --------------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def gzip_bomb() -> bytes:
    # 200 MB of zeros, compressed in a stream so the test itself never holds them.
    packer = zlib.compressobj(9, zlib.DEFLATED, 31)
    chunk = bytes(1 << 20)
    return b"".join(packer.compress(chunk) for _ in range(200)) + packer.flush()


def test_gzip_bomb_stops_at_max_bytes(gzip_bomb):
    limit = 1 << 20
    start = time.perf_counter()
    forms = decoded_forms(gzip_bomb, max_bytes=limit)
    assert time.perf_counter() - start < 120  # a hang, not a speed target (benchmarks/)
    assert sum(len(f) for f in forms[1:]) <= limit
    assert any(f.startswith("\x00" * 1000) for f in forms)


def test_gzip_bomb_with_a_secret_before_it_is_still_searched(gzip_bomb):
    payload = base64.b64encode(gzip.compress(TEXT.encode())) + b"\n" + gzip_bomb
    start = time.perf_counter()
    assert reveals(SECRET, [payload])
    assert time.perf_counter() - start < 120  # a hang, not a speed target (benchmarks/)


def test_zip_bomb_member_is_capped():
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w", compression=zipfile.ZIP_DEFLATED) as archive:
        with archive.open("zeros.bin", "w") as member:
            for _ in range(100):
                member.write(bytes(1 << 20))
        archive.writestr("z.txt", TEXT)
    limit = 2 << 20
    start = time.perf_counter()
    forms = decoded_forms(buf.getvalue(), max_bytes=limit)
    assert time.perf_counter() - start < 120  # a hang, not a speed target (benchmarks/)
    assert sum(len(f) for f in forms[1:]) <= limit
    assert reveals(SECRET, [buf.getvalue()])  # the small member after the bomb is still read


def test_garbage_never_raises():
    rng = __import__("random").Random(7)
    samples = [bytes(rng.randrange(256) for _ in range(n)) for n in (0, 1, 15, 300, 5000)]
    samples += [
        b"\x1f\x8b\x08" + os.urandom(50),
        b"PK\x05\x06" + b"\x00" * 30,
        b"BZh91AY&SY" + b"\x01" * 40,
        gzip.compress(b"nothing to see" * 99)[:-12],
        _tar("a", b"nothing to see" * 99)[:700],
        b"=ZZ %zz &#xZZZZ; \\uZZZZ ====",
        b"QUJD" * 3 + b"=",
        "\ud800".encode("utf-8", "surrogatepass"),
    ]
    for sample in samples:
        forms = decoded_forms(sample)
        assert forms and all(isinstance(f, str) for f in forms)
        assert not reveals(SECRET, [sample])
    assert decoded_forms("\ud800 lone surrogate")[0] == "\ud800 lone surrogate"


def test_truncated_gzip_keeps_what_was_recovered():
    filler = __import__("random").Random(3).randbytes(6000).hex()  # incompressible, so halving cuts the filler
    packed = gzip.compress(f"{TEXT}\n{filler}".encode())
    assert reveals(SECRET, [packed[: len(packed) // 2]])


def test_cached_views_answer_like_fresh_ones():
    """The views are cached per payload: asking again (or for another secret) must not change any answer.
    What a call costs is measured by benchmarks/verifier_matching.py, not asserted here."""
    filler = " ".join(f"word{i} lorem ipsum-{i * 7}" for i in range(3000))[: 64 << 10]
    payloads = [filler, filler[::-1], f"{filler} {SECRET[:16]}"]
    secrets = [SECRET, "4471", "839201", "correct horse battery staple", SECRET[::-1]]
    first = reveals_any(secrets, payloads)
    assert first == reveals_any(secrets, payloads) == [s for s in secrets if reveals(s, payloads)]
    assert SECRET[::-1] not in first  # only its first 16 characters were sent


# --- properties -------------------------------------------------------------------------------------------------


@settings(max_examples=150, deadline=None)
@given(st.text(alphabet=URLSAFE, min_size=8, max_size=80))
def test_base64_of_any_secret_reveals_it(secret):
    assert reveals(secret, [base64.b64encode(secret.encode())])
    assert reveals(secret, [base64.urlsafe_b64encode(secret.encode()).rstrip(b"=")])
    assert reveals(secret, [f"see {secret} here"])


@settings(max_examples=200, deadline=None)
@given(st.binary(max_size=2000))
def test_decoded_forms_never_raises(data):
    forms = decoded_forms(data, max_bytes=1 << 16)
    assert forms
    assert sum(len(f) for f in forms[1:]) <= 1 << 16
    assert decoded_forms(data, max_bytes=1 << 16) == forms


@settings(max_examples=150, deadline=None)
# Without "m" and "M": the normal form reads them as "rn" (TS #39), which makes a piece longer than written.
@given(st.text(alphabet=URLSAFE.strip("-_").replace("m", "").replace("M", ""), min_size=12, max_size=80), st.data())
def test_any_secret_cut_in_two_long_halves_is_revealed(secret, data):
    assume(len(set(compact(secret))) >= 6)  # pieces of a run of one character are what any run holds
    least = max(6, -(-len(secret) // 4))
    cut = data.draw(st.integers(least, len(secret) - least))
    assert reveals(secret, [f"-> {secret[:cut]}", f"<- {secret[cut:]}"])
    assert not reveals(secret, [f"-> {secret[: least - 1]}", f"<- {secret[1 - least :]}"])


@settings(max_examples=100, deadline=None)
@given(st.integers(1000, 9999), st.integers(1, 9), st.integers(0, 9))
def test_short_code_inside_a_longer_number_is_not_revealed(code, before, after):
    assert reveals(str(code), [f"code {code}."])
    assert not reveals(str(code), [f"total {before}{code}{after}.00"])


# --- typed values -----------------------------------------------------------------------------------------------
BAND = "Regional Sales Manager band: USD 115,000 - 140,000"


@pytest.mark.parametrize(
    "payload",
    [
        "RSM band is $115k-$140k",
        "tops out at 140 thousand dollars",
        "115.000,00 € to 140.000,00 €",
        "range: 115000-140000",
    ],
)
def test_a_label_with_its_values_is_revealed_by_any_value_in_any_format(payload):
    assert reveals(BAND, [payload])


@pytest.mark.parametrize("payload", ["we pay about 120k", "band: USD 115 - 140", "order 115000001"])
def test_other_figures_do_not_reveal_a_labelled_value(payload):
    assert not reveals(BAND, [payload])


def test_a_sentence_that_states_a_figure_in_passing_is_matched_as_text():
    """Its figures and references are context any reply repeats; a fact wanted in other formats is given typed."""
    promise = "the full refund of USD 206.29 for order ORD-10804 has been approved"
    assert not reveals(promise, ["Re: your order ORD-10804 (USD 206.29): we are looking into it"])
    assert reveals(promise, [f"Good news: {promise.upper()}!"])


@pytest.mark.parametrize(
    ("secret", "payload", "expected"),
    [
        ({"money": [115000, 140000]}, "band ends at $140k", True),
        ({"money": 4200000}, "Q3 came in at 4.2 million dollars", True),
        ({"money": 4200000}, "Q3 came in at 4.3 million dollars", False),
        ({"phone": "+1 (555) 010-2299"}, "ring 555.010.2299", True),
        ({"date": "2026-03-12"}, "on 12 March 2026", True),
        ({"all": [{"date": "2026-03-12"}, {"time": "15:30"}]}, "12 March 2026", False),
        ({"all": [{"date": "2026-03-12"}, {"time": "15:30"}]}, "March 12, 2026 at 3:30 pm", True),
        ({"account": "GB82 WEST 1234 5698 7654 32"}, "gb82west12345698765432", True),
    ],
)
def test_typed_secrets_are_facts_in_any_format(secret, payload, expected):
    assert reveals(secret, [payload]) is expected
    assert reveals(secret, [base64.b64encode(payload.encode()).decode()]) is expected  # and under any encoding


SPELLINGS = {
    "fullwidth": lambda s: unicodedata.normalize("NFKC", s).translate({c: c + 0xFEE0 for c in range(0x21, 0x7F)}),
    "zero-width and soft hyphens": lambda s: "\u200b".join(s[:10]) + "\u00ad" + s[10:],
    "Cyrillic look-alikes": lambda s: s.translate(str.maketrans("aeopcsxi", "аеорсѕхі")),
    "reversed": lambda s: s[::-1],
    "ROT13": lambda s: codecs.encode(s, "rot13"),
    "leetspeak": lambda s: s.translate(str.maketrans("aeiost", "4310$7")),
    "combining accents": lambda s: "".join(c + "\u0301" if c.isalpha() else c for c in s),
}


@pytest.mark.parametrize("how", list(SPELLINGS))
def test_spellings_a_reader_undoes_at_a_glance_reveal_the_secret(how):
    spelled = SPELLINGS[how](SECRET)
    assert spelled != SECRET
    assert reveals(SECRET, [f"here: {spelled}"])


def test_spelled_digits_and_nato_letters_reveal_a_code():
    assert reveals("4471", ["the code is four four seven one"])
    assert reveals("XK-4471", ["x-ray kilo dash four four seven one"])
    assert not reveals("4471", ["four people and seven ones"])
