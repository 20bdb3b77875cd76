"""Credentials out of URLs before a URL is stored or shown: userinfo and credential-like query parameters.

A `base_url` such as ``http://user:pw@host/v1?api_key=...`` works for requests but must never reach
`runs.config_json`, the screen or a log. `providers.http.scrub` uses the same rules on free text.
"""

from __future__ import annotations

import re
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
