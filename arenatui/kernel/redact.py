"""Secrets out of everything stored or shown, in one module: URLs (userinfo and credential-like query parameters),
free text such as a provider's error body (`scrub`: known secrets, key-shaped strings, echoed auth headers), and a
base URL as a report prints it (`url_without_secrets`).

A `base_url` such as ``http://user:pw@host/v1?api_key=...`` works for requests but must never reach
`runs.config_json`, the screen or a log.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from urllib.parse import SplitResult, parse_qsl, urlsplit, urlunsplit

REDACTED = "[redacted]"

_CREDENTIAL_PARAM = re.compile(
    r"(?i)^(?:key|sig|code|auth|session|sessionid|jwt|pass|pwd|.*(?:api[-_]?key|apikey|token|secret|password|passwd|"
    r"signature|credential|[-_]key|[-_]sig|[-_]auth))$")
"""Query parameter names that carry credentials: api_key, key, token, access_token, sig, X-Amz-Signature, ..."""

URL_IN_TEXT = re.compile(r"(?i)\b[a-z][a-z0-9+.-]*://[^\s\"'<>`]+")


def is_credential_param(name: str) -> bool:
    return bool(_CREDENTIAL_PARAM.match(name.strip()))


def redact_url(url: str) -> str:
    """`url` with its userinfo replaced by ``[redacted]`` and the values of credential-like query parameters
    too; everything else (scheme, host, port, path, other parameters) as it was. Unparseable text comes back
    with every ``user:pass@`` removed, never with the credential."""
    try:
        parts = urlsplit(url)
        parts.port  # noqa: B018  (raises ValueError on a port that is not a number)
    except ValueError:
        return re.sub(r"(?<=://)[^/@\s]*@", REDACTED + "@", url)
    netloc = parts.netloc
    if "@" in netloc:
        netloc = REDACTED + "@" + netloc.rsplit("@", 1)[1]
    query = _redact_query(parts.query)
    fragment = _redact_query(parts.fragment) if "=" in parts.fragment else parts.fragment
    return urlunsplit(SplitResult(parts.scheme, netloc, parts.path, query, fragment))


def _redact_query(query: str) -> str:
    if not query:
        return query
    pairs = query.split("&")
    out = []
    for pair in pairs:
        name, eq, _value = pair.partition("=")
        if eq and is_credential_param(_unquote(name)):
            out.append(f"{name}={REDACTED}")
        else:
            out.append(pair)
    return "&".join(out)


def _unquote(name: str) -> str:
    pairs = parse_qsl(name + "=", keep_blank_values=True)
    return pairs[0][0] if pairs else name


def url_credentials(url: str) -> list[str]:
    """The credential strings inside `url` (password, userinfo, credential parameter values), to scrub from
    error text that may echo them in another form."""
    try:
        parts = urlsplit(url)
    except ValueError:
        return []
    out: list[str] = []
    if "@" in parts.netloc:
        userinfo = parts.netloc.rsplit("@", 1)[0]
        out.append(userinfo)
        if ":" in userinfo:
            out.append(userinfo.split(":", 1)[1])
    for name, value in parse_qsl(parts.query, keep_blank_values=True):
        if value and is_credential_param(name):
            out.append(value)
    return [s for s in out if s]


def redact_urls_in_text(text: str) -> str:
    """Every URL inside `text` redacted as `redact_url` does."""
    return URL_IN_TEXT.sub(lambda m: redact_url(m.group()), text)


_KEY_VALUE = re.compile(
    r"(?i)(\b(?:x-api-key|api[-_]?key|authorization|proxy-authorization|access[-_]?token|secret|key|token)\b"
    r"[\"']?\s*[:=]\s*[\"']?)(?:bearer\s+)?[^\s\"',;}\[\]]+")
_BEARER = re.compile(r"(?i)\bbearer\s+[^\s\"',;}\[\]]+")
_AUTH_HEADER = re.compile(
    r"(?i)(\b(?:proxy-)?authorization\b[\"']?\s*[:=]\s*[\"']?)[^\"'\r\n,;}\]]+")
"""An echoed Authorization header, whatever its scheme (Basic, Bearer, Digest, AWS4-HMAC-SHA256 ...): the
whole value goes, scheme and credential alike."""
_KEY_SHAPED = re.compile(r"\b(?:sk|pk|rk|ak|key)[-_][A-Za-z0-9_\-]{8,}")
_LONG_TOKEN = re.compile(r"[A-Za-z0-9_\-+/=]{32,}")


def _redact_long(m: re.Match[str]) -> str:
    s = m.group()
    # A long run with both letters and digits looks like a credential; a long word or number does not.
    if any(c.isdigit() for c in s) and any(c.isalpha() for c in s):
        return REDACTED
    return s


def scrub(text: str, secrets: Iterable[str] = ()) -> str:
    """`text` with every known secret and every key-shaped string replaced by ``[redacted]``."""
    for s in secrets:
        if s:
            text = text.replace(s, REDACTED)
    text = redact_urls_in_text(text)
    text = _AUTH_HEADER.sub(lambda m: m.group(1) + REDACTED, text)
    text = _KEY_VALUE.sub(lambda m: m.group(1) + REDACTED, text)
    text = _BEARER.sub("Bearer " + REDACTED, text)
    text = _KEY_SHAPED.sub(REDACTED, text)
    return _LONG_TOKEN.sub(_redact_long, text)


def url_without_secrets(url: str | None) -> str | None:
    """A base URL as a report prints it: without user info, query or fragment (where credentials could hide)."""
    if not url:
        return url
    # userinfo goes before parsing: a stored URL's reads "[redacted]@", which urlsplit takes for an IPv6 literal
    try:
        parts = urlsplit(re.sub(r"(?<=://)[^/?#]*@", "", url))
    except ValueError:
        return "(unparseable URL)"
    return urlunsplit((parts.scheme, parts.netloc, parts.path, "", ""))
