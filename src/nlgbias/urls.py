"""Server URLs in messages, files and the store: never with credentials.

A URL may carry a user name and password (``http://user:KEY@host/v1``) or a key in its query
string or fragment (``/v1?api-key=KEY``, ``/v1#KEY``).  nlgbias refuses such URLs
(:func:`refuse_credentials`; the key belongs in an environment variable named by
``--api-key-env``), and :func:`redact` hides the credentials, query and fragment of any URL in a
text before it is printed or written, as a second line of defence.
"""

from __future__ import annotations

import re
from urllib.parse import urlsplit

from nlgbias.errors import InputError, option

# scheme://userinfo@ : userinfo is everything up to the last '@' before the host's '/', '?' or '#'
_USERINFO = re.compile(r"(?P<scheme>[A-Za-z][A-Za-z0-9+.-]*://)(?P<userinfo>[^/?#\s]*)@")
# scheme://host/path?query#fragment : the query and fragment, up to a space, quote, bracket or ': '
_QUERY = re.compile(r"(?P<url>[A-Za-z][A-Za-z0-9+.-]*://[^\s'\"<>()\[\]?#]*)(?P<mark>[?#])(?:(?!:(?:\s|$))[^\s'\"<>()\[\]])*")


def redact(text: str) -> str:
    """``text`` with the credentials of every URL in it replaced by ``***``.

    >>> redact("--model openai:m@http://user:SECRET@127.0.0.1:9/v1 failed")
    '--model openai:m@http://***@127.0.0.1:9/v1 failed'
    >>> redact("http://127.0.0.1:9/v1")
    'http://127.0.0.1:9/v1'
    >>> redact("--model openai:m@http://127.0.0.1:9/v1?api-key=SECRET: refused")
    '--model openai:m@http://127.0.0.1:9/v1?***: refused'
    """
    text = _USERINFO.sub(lambda m: f"{m.group('scheme')}***@", str(text))
    return _QUERY.sub(lambda m: f"{m.group('url')}{m.group('mark')}***", text)


def has_credentials(url: str) -> bool:
    """Whether ``url`` names a user or password (``scheme://user[:password]@host``)."""
    try:
        parts = urlsplit(url)
    except ValueError:
        return bool(_USERINFO.search(url))
    return parts.username is not None or parts.password is not None or bool(_USERINFO.search(url))


def has_query(url: str) -> bool:
    """Whether ``url`` has a query string or a fragment (``?...``, ``#...``, even an empty one)."""
    return "?" in url or "#" in url


def refuse_credentials(url: str, where: str) -> None:
    """Raise :class:`InputError` (without the secret) when ``url`` carries credentials, a query
    string or a fragment (where keys are put too: ``?api-key=KEY``)."""
    if has_query(url):
        raise InputError(f"{redact(where)}: {redact(url)}: a server URL takes no query string or fragment "
                         f"(?... or #..., where a key would be sent and shown); give the server's base URL, e.g. "
                         f"http://127.0.0.1:8000/v1, and put the key in an environment variable named by "
                         f"{option('--api-key-env')} (default OPENAI_API_KEY)")
    if has_credentials(url):
        raise InputError(f"{redact(where)}: {redact(url)}: the URL holds credentials (user:password@); "
                         f"give the server URL without them and put the key in an environment variable named "
                         f"by {option('--api-key-env')} (default OPENAI_API_KEY)")


__all__ = ["has_credentials", "has_query", "redact", "refuse_credentials"]
