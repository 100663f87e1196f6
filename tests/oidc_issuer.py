"""A small, real OAuth2 / OpenID Connect issuer for tests, on ``http.server`` and port 0: the discovery
document, a token endpoint for the client-credentials grant, and the JWKS of keys generated here with
``cryptography`` (RS256 or ES256).

    with OidcIssuer(clients={"svc": ("secret", "svc-role")}) as issuer:
        issuer.url                           # http://127.0.0.1:<port>
        issuer.credentials_url("svc")        # data:application/json;base64,... for AuthenticationOauth2
        issuer.token("svc-role", audience="pulsar")   # a signed access token, without the HTTP round trip

``serve=False``: no server, keys and tokens only (``documents()`` is what it would serve, for unit tests).
``now_s`` is the issuer's clock (a function: tests move it with the broker's fake clock); ``lifetime_s`` how
long tokens it issues last; ``requests`` counts the requests per path. ``rotate()`` replaces the signing key
by a new one with a new ``kid`` (the old one stays published unless ``drop_old``).
"""
from __future__ import annotations

import base64
import json
import threading
import time
import urllib.parse
from collections import Counter
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any, Callable

import jwt
from cryptography.hazmat.primitives.asymmetric import ec, rsa

DISCOVERY = "/.well-known/openid-configuration"
TOKEN = "/oauth/token"
JWKS = "/jwks.json"


class OidcIssuer:
    def __init__(self, clients: dict[str, tuple[str, str]] | None = None, algorithm: str = "RS256",
                 lifetime_s: float = 3600, now_s: Callable[[], float] = time.time, default_audience: str = "",
                 serve: bool = True, url: str = "https://issuer.test") -> None:
        self.clients = dict(clients or {})
        """client_id -> (client_secret, the role its tokens carry in ``sub``)."""
        self.algorithm = algorithm
        self.lifetime_s = lifetime_s
        self.now_s = now_s
        self.default_audience = default_audience
        self.requests: Counter[str] = Counter()
        self.token_forms: list[dict[str, str]] = []
        self._keys: list[tuple[str, Any]] = []
        self._serial = 0
        self.rotate()
        issuer = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args: Any) -> None:
                pass

            def do_GET(self) -> None:  # noqa: N802
                issuer.requests[self.path] += 1
                answer = issuer.documents().get(issuer.url + self.path)
                self._json(200, answer) if answer is not None else self._json(404, {"error": "not_found"})

            def do_POST(self) -> None:  # noqa: N802
                issuer.requests[self.path] += 1
                body = self.rfile.read(int(self.headers.get("Content-Length") or 0)).decode()
                if self.path != TOKEN:
                    return self._json(404, {"error": "not_found"})
                if "json" in (self.headers.get("Content-Type") or ""):
                    form = json.loads(body)
                else:
                    form = {k: v[0] for k, v in urllib.parse.parse_qs(body).items()}
                basic = self.headers.get("Authorization", "")
                if basic.lower().startswith("basic "):
                    user, _, secret = base64.b64decode(basic[6:]).decode().partition(":")
                    form.setdefault("client_id", urllib.parse.unquote(user))
                    form.setdefault("client_secret", urllib.parse.unquote(secret))
                issuer.token_forms.append(form)
                if form.get("grant_type") != "client_credentials":
                    return self._json(400, {"error": "unsupported_grant_type"})
                client = issuer.clients.get(form.get("client_id", ""))
                if client is None or client[0] != form.get("client_secret"):
                    return self._json(401, {"error": "invalid_client"})
                audience = form.get("audience") or issuer.default_audience
                self._json(200, {"access_token": issuer.token(client[1], audience=audience),
                                 "token_type": "Bearer", "expires_in": int(issuer.lifetime_s)})

            def _json(self, status: int, value: Any) -> None:
                data = json.dumps(value).encode()
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

        self._server = None
        self.url = url
        if not serve:  # keys and tokens only, for unit tests: documents() answers what the server would
            return
        self._server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self._server.daemon_threads = True
        self.url = f"http://127.0.0.1:{self._server.server_address[1]}"
        self._thread = threading.Thread(target=self._server.serve_forever, name="oidc-issuer", daemon=True)
        self._thread.start()

    # ------------------------------------------------------------------ keys and tokens
    def rotate(self, drop_old: bool = False) -> str:
        """A new signing key (returns its kid)."""
        self._serial += 1
        kid = f"key-{self._serial}"
        key = (ec.generate_private_key(ec.SECP256R1()) if self.algorithm.startswith("ES")
               else rsa.generate_private_key(public_exponent=65537, key_size=2048))
        self._keys = ([] if drop_old else self._keys) + [(kid, key)]
        return kid

    def documents(self) -> dict[str, Any]:
        """URL -> JSON of the discovery document and the JWKS."""
        discovery = {"issuer": self.url, "token_endpoint": self.url + TOKEN, "jwks_uri": self.url + JWKS,
                     "grant_types_supported": ["client_credentials"]}
        return {self.url + DISCOVERY: discovery, self.url + JWKS: self.jwks()}

    def jwks(self) -> dict[str, Any]:
        keys = []
        for kid, key in self._keys:
            algorithm = jwt.algorithms.ECAlgorithm if self.algorithm.startswith("ES") else jwt.algorithms.RSAAlgorithm
            jwk = algorithm.to_jwk(key.public_key(), as_dict=True)
            keys.append({**jwk, "kid": kid, "use": "sig", "alg": self.algorithm})
        return {"keys": keys}

    def token(self, subject: str, audience: str | list[str] | None = "", issuer: str | None = None,
              lifetime_s: float | None = None, kid: str | None = None, drop: tuple[str, ...] = (),
              **claims: Any) -> str:
        """An access token signed with the current key (``kid``: another published one; ``drop``: claims
        left out)."""
        now = int(self.now_s())
        payload: dict[str, Any] = {"iss": issuer or self.url, "sub": subject, "iat": now, "nbf": now,
                                   "exp": now + int(lifetime_s if lifetime_s is not None else self.lifetime_s),
                                   **claims}
        if audience:
            payload["aud"] = audience
        for name in drop:
            payload.pop(name, None)
        kid, key = next(k for k in self._keys if k[0] == kid) if kid else self._keys[-1]
        return jwt.encode(payload, key, algorithm=self.algorithm, headers={"kid": kid})

    def credentials_url(self, client_id: str) -> str:
        """The ``private_key`` of ``AuthenticationOauth2`` for ``client_id``, as a data: URL."""
        data = json.dumps({"client_id": client_id, "client_secret": self.clients[client_id][0]}).encode()
        return "data:application/json;base64," + base64.b64encode(data).decode()

    def auth_params(self, client_id: str, audience: str = "", **extra: str) -> str:
        """pulsar-client's ``AuthenticationOauth2`` JSON for ``client_id``."""
        params = {"type": "client_credentials", "issuer_url": self.url, "private_key": self.credentials_url(client_id)}
        if audience:
            params["audience"] = audience
        return json.dumps({**params, **extra})

    def close(self) -> None:
        if self._server is None:
            return
        self._server.shutdown()
        self._server.server_close()
        self._thread.join(timeout=5)

    def __enter__(self) -> "OidcIssuer":
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
