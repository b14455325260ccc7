"""Prints the pydantic part of the structured-output corpus: the JSON Schema
pydantic 2 writes (model_json_schema) for the models agent code declares.
testdata/schemas/corpus.json holds its output with the JavaScript
libraries' (testdata/clients/schemas.mjs); cmd/glassbox's TestSchemaCorpusIsCurrent
reruns both where python3 with pydantic and node are installed."""
import datetime
import decimal
import enum
import json
import uuid
from ipaddress import IPv4Address
from typing import Literal, Optional, Union

from pydantic import BaseModel, Field, HttpUrl, confloat, conint, constr


class Color(enum.Enum):
    red = "red"
    green = "green"


class Cat(BaseModel):
    kind: Literal["cat"]
    lives: int


class Dog(BaseModel):
    kind: Literal["dog"]
    bark: constr(max_length=10)


class Node(BaseModel):
    value: constr(max_length=12)
    children: list["Node"] = Field(default=[], max_length=2)


def model(name, **fields):
    return type(name, (BaseModel,), {"__annotations__": {k: v[0] for k, v in fields.items()},
                                     **{k: v[1] for k, v in fields.items() if len(v) > 1}})


models = {
    "uuid": model("M", id=(uuid.UUID,)),
    "datetime": model("M", at=(datetime.datetime,)),
    "date_time": model("M", d=(datetime.date,), t=(datetime.time,)),
    "httpurl": model("M", u=(HttpUrl,)),
    "bounds": model("M", n=(conint(gt=0, le=10),), f=(confloat(ge=0.5, le=2.5),)),
    "constr": model("M", s=(constr(pattern=r"^[a-z]+$", max_length=8),)),
    "enum": model("M", c=(Color,)),
    "optional": model("M", o=(Optional[constr(max_length=10)], None)),
    "discriminated": model("M", pet=(Union[Cat, Dog], Field(discriminator="kind"))),
    "union": model("M", v=(Union[int, constr(max_length=10)],)),
    "dict": model("M", r=(dict[constr(max_length=10), int],)),
    "tuple": model("M", t=(tuple[constr(max_length=10), int],)),
    "set": model("M", s=(set[str],)),
    "decimal": model("M", d=(decimal.Decimal,)),
    "ipv4": model("M", ip=(IPv4Address,)),
    "timedelta": model("M", dur=(datetime.timedelta,)),
    "recursive": Node,
    "list": model("M", xs=(list[int], Field(min_length=1, max_length=3))),
}
print(json.dumps([{"generator": "pydantic", "name": k, "schema": v.model_json_schema()} for k, v in models.items()], indent=1))
