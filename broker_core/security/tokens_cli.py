"""``pulsarlike tokens``: make and check the keys and tokens of token authentication, like ``pulsar tokens``.

    pulsarlike tokens create-secret-key [--output FILE] [--base64]
    pulsarlike tokens create-key-pair [--signature-algorithm RS256|ES256|...] --output-private-key FILE
                                      --output-public-key FILE
    pulsarlike tokens create (--secret-key KEY | --private-key KEY) --subject ROLE [--expiry-time 1y]
                             [--signature-algorithm HS256|RS256|...] [--claim NAME=VALUE ...]
    pulsarlike tokens validate (--secret-key KEY | --public-key KEY) [--signature-algorithm RS256]
                               [--token-file FILE | TOKEN]
    pulsarlike tokens show [--token-file FILE | TOKEN]

KEY takes the broker's forms: ``file:///path``, ``data:;base64,...``, ``env:NAME`` or base64
(:mod:`broker_core.security.keys`). Keys are written as Pulsar writes them (a secret's raw bytes;
PKCS#8 / X.509 DER key pairs), so they work with a Pulsar cluster too. ``create`` prints the token;
``validate`` prints its claims as JSON and exits 1 with the reason when the token is refused; ``show``
prints the claims without checking the signature. Files are created readable by their owner only.
Exit codes: 0 done; 1 refused or unreadable; 2 bad usage.
"""
from __future__ import annotations

import argparse
import base64
import json
import os
import re
import sys
import time
from pathlib import Path
from typing import Sequence

from broker_core.errors import PulsarLikeError

_UNITS = {"s": 1, "m": 60, "h": 3600, "d": 86400, "w": 7 * 86400, "y": 365 * 86400}


def relative_seconds(text: str) -> int:
    """``30s``, ``10m``, ``12h``, ``7d``, ``2w``, ``1y`` (a bare number is seconds), as Pulsar reads them."""
    match = re.fullmatch(r"(\d+)([smhdwy]?)", text.strip())
    if not match:
        raise argparse.ArgumentTypeError(f"invalid time {text!r} (e.g. 3600, 30m, 12h, 7d, 1y)")
    return int(match.group(1)) * _UNITS[match.group(2) or "s"]


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="pulsarlike tokens", description=__doc__.split("\n\n")[0])
    verbs = parser.add_subparsers(dest="verb", required=True, metavar="VERB")
    p = verbs.add_parser("create-secret-key", help="a random HS256 secret key")
    p.add_argument("-o", "--output", help="write the key's raw bytes here (default: print base64)")
    p.add_argument("-b", "--base64", action="store_true", help="print the key as base64")
    p = verbs.add_parser("create-key-pair", help="a private/public key pair for RS256 or ES256 tokens")
    p.add_argument("-a", "--signature-algorithm", default="RS256")
    p.add_argument("--output-private-key", required=True)
    p.add_argument("--output-public-key", required=True)
    p = verbs.add_parser("create", help="a token for a role (its subject)")
    key = p.add_mutually_exclusive_group(required=True)
    key.add_argument("-sk", "--secret-key", help="HS256 secret key (file:///..., data:..., env:..., base64)")
    key.add_argument("-pk", "--private-key", help="private key for RS256/ES256 ... tokens")
    p.add_argument("-s", "--subject", required=True, help="the role the token carries")
    p.add_argument("-e", "--expiry-time", type=relative_seconds, help="valid for this long (default: forever)")
    p.add_argument("-a", "--signature-algorithm", default=None, help="default HS256 (secret) / RS256 (private)")
    p.add_argument("-c", "--claim", action="append", default=[], metavar="NAME=VALUE",
                   help="another claim, e.g. aud=my-broker (repeatable)")
    p.add_argument("--role-claim", default="sub", help="the claim holding the role (the broker's tokenAuthClaim)")
    p = verbs.add_parser("validate", help="check a token as the broker would; print its claims")
    key = p.add_mutually_exclusive_group(required=True)
    key.add_argument("-sk", "--secret-key")
    key.add_argument("-pk", "--public-key")
    p.add_argument("-a", "--signature-algorithm", default="RS256", help="the public key's algorithm")
    _token_args(p)
    p = verbs.add_parser("show", help="print a token's claims (signature not checked)")
    _token_args(p)
    return parser


def _token_args(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("token", nargs="?", help="the token (or --token-file, or standard input)")
    parser.add_argument("-f", "--token-file", help="read the token from this file")


def _token(args: argparse.Namespace) -> str:
    if args.token_file:
        return Path(args.token_file).read_text().strip()
    return (args.token or sys.stdin.read()).strip()


def _write(path: str, data: bytes) -> None:
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(fd, "wb") as out:
        out.write(data)


def run(args: argparse.Namespace) -> str:
    import jwt

    from broker_core.security import tokens
    from broker_core.security.keys import load_private_key, load_public_key, read_key

    if args.verb == "create-secret-key":
        secret = tokens.generate_secret_key()
        if args.output:
            _write(args.output, secret)
            return ""
        return base64.b64encode(secret).decode()
    if args.verb == "create-key-pair":
        private, public = tokens.generate_key_pair(args.signature_algorithm)
        _write(args.output_private_key, private)
        _write(args.output_public_key, public)
        return ""
    if args.verb == "create":
        claims = dict(item.split("=", 1) for item in args.claim if "=" in item)
        if args.secret_key:
            key, algorithm = read_key("--secret-key", args.secret_key), args.signature_algorithm or "HS256"
        else:
            key = load_private_key("--private-key", read_key("--private-key", args.private_key))
            algorithm = args.signature_algorithm or "RS256"
        expires = time.time() + args.expiry_time if args.expiry_time else None
        return tokens.create_token(key, args.subject, algorithm, expires, claims, args.role_claim)
    if args.verb == "validate":
        if args.secret_key:
            validator = tokens.TokenValidator(secret=read_key("--secret-key", args.secret_key))
        else:
            validator = tokens.TokenValidator(public_key=load_public_key("--public-key", read_key(
                "--public-key", args.public_key)), public_alg=args.signature_algorithm)
        token = _token(args)
        validator.validate(token)
        return json.dumps(jwt.decode(token, options={"verify_signature": False}), sort_keys=True)
    token = _token(args)
    try:
        return json.dumps({"header": jwt.get_unverified_header(token),
                           "claims": jwt.decode(token, options={"verify_signature": False})}, sort_keys=True)
    except jwt.PyJWTError:
        raise ValueError("not a JWT") from None


def main(argv: Sequence[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    if argv[:1] == ["tokens"]:
        argv = argv[1:]
    try:
        args = _parser().parse_args(argv)
    except SystemExit as done:
        return int(done.code or 0)
    try:
        printed = run(args)
    except PulsarLikeError as exc:
        print(f"pulsarlike tokens: {exc.code}: {exc.message}", file=sys.stderr)
        return 1
    except (OSError, ValueError) as exc:
        print(f"pulsarlike tokens: error: {exc}", file=sys.stderr)
        return 1
    if printed:
        print(printed)
    return 0


if __name__ == "__main__":
    sys.exit(main())
