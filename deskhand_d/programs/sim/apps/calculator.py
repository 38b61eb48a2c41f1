"""Calculator: a working four-function calculator with the element labels and IDs Sky shows.

What this owns: the arithmetic model (exact decimal arithmetic, pending operator, repeated
equals, percent, change sign, delete, clear), the display formatting (thousands separators, an
invisible U+200E before the number as in the capture), and the window: the keypad of the real
capture plus an expression line that appears above the display once an operator is used. That
line is what makes indices move: after ``12 +`` every element from the display on is numbered
one higher than in the first capture.
"""

from __future__ import annotations

from dataclasses import replace
from decimal import Decimal, DivisionByZero, InvalidOperation, localcontext
from typing import ClassVar

from ..ax import Element, Paint, Window
from ..keys import Chord
from .base import SimApp, traffic_lights

_LRM = "\u200e"
_SYMBOL = {"+": "+", "-": "−", "*": "×", "/": "÷"}
_OP_KEYS = {"Add": "+", "Subtract": "-", "Multiply": "*", "Divide": "/"}
_DIGIT_IDS = ("Zero", "One", "Two", "Three", "Four", "Five", "Six", "Seven", "Eight", "Nine")
_ERROR = "Not a number"
_MAX_DIGITS = 16

# Keypad rows in on-screen order; each entry is (key, glyphs, colour).
_KEYPAD = (
    (("Delete", "⌫", "calc_fn"), ("AllClear", "AC", "calc_fn"), ("Percent", "%", "calc_fn"),
     ("Divide", "÷", "calc_op")),
    (("Seven", "7", "calc_key"), ("Eight", "8", "calc_key"), ("Nine", "9", "calc_key"),
     ("Multiply", "×", "calc_op")),
    (("Four", "4", "calc_key"), ("Five", "5", "calc_key"), ("Six", "6", "calc_key"),
     ("Subtract", "−", "calc_op")),
    (("One", "1", "calc_key"), ("Two", "2", "calc_key"), ("Three", "3", "calc_key"),
     ("Add", "+", "calc_op")),
    (("Negate", "±", "calc_key"), ("Zero", "0", "calc_key"), ("Decimal", ".", "calc_key"),
     ("Equals", "=", "calc_op")),
)  # fmt: skip


def _group(integer: str) -> str:
    sign = "-" if integer.startswith("-") else ""
    digits = integer.lstrip("-")
    return sign + f"{int(digits):,}" if digits else sign


def format_number(value: Decimal) -> str:
    """Display form of a result: grouped, at most 16 significant digits, no trailing zeros."""
    if value == 0:
        return "0"
    if value == value.to_integral_value() and abs(value) < Decimal(10) ** _MAX_DIGITS:
        return f"{int(value):,}"
    if abs(value) >= Decimal(10) ** _MAX_DIGITS or abs(value) < Decimal("1e-8"):
        mantissa, _, exponent = f"{value:.9e}".partition("e")
        mantissa = mantissa.rstrip("0").rstrip(".")
        return f"{mantissa}e{int(exponent)}"
    with localcontext() as ctx:
        ctx.prec = _MAX_DIGITS
        rounded = +value
    text = format(rounded, "f")
    if "." in text:
        text = text.rstrip("0").rstrip(".")
    integer, dot, fraction = text.partition(".")
    return _group(integer) + dot + fraction


def format_entry(entry: str) -> str:
    """Display form of a number being typed: grouped, trailing ``.`` and zeros kept."""
    integer, dot, fraction = entry.partition(".")
    return _group(integer) + dot + fraction


class Calculator(SimApp):
    name: ClassVar[str] = "Calculator"
    zh_name: ClassVar[str] = "计算器"
    bundle_id: ClassVar[str] = "com.apple.calculator"
    path: ClassVar[str] = "/System/Applications/Calculator.app"
    width: ClassVar[int] = 230
    height: ClassVar[int] = 410
    background: ClassVar[str] = "calc_bg"

    def __init__(self, pid: int, locale: str) -> None:
        super().__init__(pid, locale)
        self._all_clear()

    def _all_clear(self) -> None:
        self.entry = "0"
        self.typing = False
        self.acc: Decimal | None = None
        self.op: str | None = None
        self.last: tuple[str, Decimal] | None = None
        self.expression: str | None = None
        self.error = False

    # --- model --------------------------------------------------------------------------------

    @property
    def display(self) -> str:
        if self.error:
            return _ERROR
        return format_entry(self.entry) if self.typing else format_number(Decimal(self.entry))

    def _value(self) -> Decimal:
        return Decimal(self.entry)

    def _show(self, value: Decimal) -> None:
        self.entry = format(value.normalize(), "f") if value != 0 else "0"
        self.typing = False

    def _apply(self, a: Decimal, op: str, b: Decimal) -> Decimal | None:
        try:
            with localcontext() as ctx:
                ctx.prec = 34
                ctx.traps[DivisionByZero] = True
                ctx.traps[InvalidOperation] = True
                if op == "+":
                    return a + b
                if op == "-":
                    return a - b
                if op == "*":
                    return a * b
                return a / b
        except (DivisionByZero, InvalidOperation):
            return None

    def _fail(self) -> None:
        self._all_clear()
        self.error = True

    def digit(self, d: str) -> None:
        if self.error:
            self._all_clear()
        if not self.typing:
            self.entry, self.typing = d, True
            if self.op is None:
                self.expression = None
        elif self.entry in ("0", "-0"):
            self.entry = self.entry[:-1] + d
        elif sum(c.isdigit() for c in self.entry) < _MAX_DIGITS:
            self.entry += d

    def point(self) -> None:
        if self.error:
            self._all_clear()
        if not self.typing:
            self.entry, self.typing = "0.", True
            if self.op is None:
                self.expression = None
        elif "." not in self.entry:
            self.entry += "."

    def operator(self, op: str) -> None:
        if self.error:
            return
        if self.op is not None and self.acc is not None and self.typing:
            result = self._apply(self.acc, self.op, self._value())
            if result is None:
                self._fail()
                return
            self._show(result)
        self.acc = self._value()
        self.op = op
        self.typing = False
        self.expression = format_number(self.acc) + _SYMBOL[op]

    def equals(self) -> None:
        if self.error:
            return
        if self.op is not None and self.acc is not None:
            a, op, b = self.acc, self.op, self._value()
        elif self.last is not None:
            a, (op, b) = self._value(), self.last
        else:
            return
        result = self._apply(a, op, b)
        if result is None:
            self._fail()
            return
        self.expression = format_number(a) + _SYMBOL[op] + format_number(b)
        self.last = (op, b)
        self.acc, self.op = None, None
        self._show(result)

    def percent(self) -> None:
        if self.error:
            return
        value = self._value()
        if self.op in ("+", "-") and self.acc is not None:
            value = self.acc * value / 100
        else:
            value = value / 100
        self._show(value)
        self.typing = self.op is not None  # keep it as the operand being entered

    def negate(self) -> None:
        if self.error:
            return
        if self.entry.startswith("-"):
            self.entry = self.entry[1:]
        elif self.entry not in ("0",):
            self.entry = "-" + self.entry

    def delete(self) -> None:
        if self.error:
            self._all_clear()
        elif self.typing:
            self.entry = self.entry[:-1]
            if self.entry in ("", "-"):
                self.entry = "0"

    def feed(self, char: str) -> None:
        """One keyboard character, as Calculator interprets typing."""
        if char.isdigit():
            self.digit(char)
        elif char in "+-*/":
            self.operator(char)
        elif char in "xX":
            self.operator("*")
        elif char in "=\n\r":
            self.equals()
        elif char == ".":
            self.point()
        elif char == "%":
            self.percent()
        elif char in "cC":
            self._all_clear()

    # --- actions ------------------------------------------------------------------------------

    def press(self, key: str, count: int, button: str) -> None:
        if button != "left":
            return
        name = key.removeprefix("calc.")
        for _ in range(max(1, count)):
            if name in _DIGIT_IDS:
                self.digit(str(_DIGIT_IDS.index(name)))
            elif name in _OP_KEYS:
                self.operator(_OP_KEYS[name])
            elif name == "Equals":
                self.equals()
            elif name == "AllClear":
                self._all_clear()
            elif name == "Delete":
                self.delete()
            elif name == "Negate":
                self.negate()
            elif name == "Decimal":
                self.point()
            elif name == "Percent":
                self.percent()

    def key(self, chord: Chord) -> None:
        if chord.name in ("Return", "KP_Enter"):
            self.equals()
        elif chord.name == "Escape":
            self._all_clear()
        elif chord.name in ("BackSpace", "Delete"):
            self.delete()
        elif chord.char is not None and chord.plain:
            self.feed(chord.char)

    def type_text(self, text: str) -> None:
        for char in text:
            self.feed(char)

    # --- window -------------------------------------------------------------------------------

    def window(self) -> Window:
        title = self.display_name
        display_text = self.display
        scale = next(s for s in (5, 4, 3, 2, 1) if len(display_text) * 4 * s <= 214)
        display_children = []
        if self.expression is not None:
            display_children.append(
                Element(
                    "calc.expression",
                    role="text",
                    label=self.expression,
                    frame=(0, 44, 230, 36),
                    paint=Paint(text=self.expression, ink="text_dim", align="right", scale=2),
                )
            )
        display_children.append(
            Element(
                "calc.display",
                role="text",
                label=_LRM + display_text,
                frame=(0, 80, 230, 52),
                paint=Paint(text=display_text, ink="text_light", align="right", scale=scale),
            )
        )
        keypad: list[Element] = [
            Element(
                "calc.input",
                role="scroll area",
                description="Edit field",
                ident="StandardInputView",
                actions=("Copy",),
                children=display_children,
                frame=(0, 40, 230, 94),
            )
        ]
        for r, row in enumerate(_KEYPAD):
            for c, (key, glyphs, colour) in enumerate(row):
                node = replace(
                    _button(key),
                    frame=(1 + 57 * c, 134 + 55 * r, 55, 53),
                    paint=Paint(fill=colour, text=glyphs, ink="text_light", scale=3),
                )
                keypad.append(node)
        toolbar = Element(
            "calc.toolbar",
            role="toolbar",
            frame=(0, 0, 230, 40),
            paint=Paint(fill="calc_fn"),
            children=[
                Element(
                    "calc.sidebar",
                    role="button",
                    description="Show Sidebar",
                    actions=("Increment", "Decrement", "Delete", "Cancel"),
                    frame=(80, 9, 24, 22),
                    paint=Paint(fill="calc_key"),
                ),
                Element(
                    "calc.mode",
                    role="button",
                    description="Mode",
                    ident="Mode: basic; unitConversion: false",
                    actions=(
                        "Increment",
                        "Decrement",
                        "Delete",
                        "Cancel",
                        "Move previous",
                        "Remove from toolbar",
                    ),
                    frame=(196, 9, 24, 22),
                    paint=Paint(fill="calc_key"),
                ),
            ],
        )
        root = Element(
            "calc.window",
            role="standard window",
            label=title,
            ident="main",
            actions=("Raise",),
            frame=(0, 0, self.width, self.height),
            children=[
                Element(
                    "calc.split",
                    role="split group",
                    label="main, SidebarNavigationSplitView",
                    children=[
                        Element(
                            "calc.keypad",
                            role="container",
                            label="CalculatorKeypadView",
                            children=keypad,
                        )
                    ],
                ),
                toolbar,
                *traffic_lights("calc", zoom_disabled=True, y=14),
            ],
        )
        menu = self.menu_bar(
            [(self.name, None), ("Edit", None), ("View", None), ("Window", None), ("Help", None)]
        )
        return Window(title=title, app_name=title, root=root, menu_bar=menu)


def _button(key: str) -> Element:
    """A keypad button exactly as the capture labels it."""
    k = f"calc.{key}"
    if key in _DIGIT_IDS:
        return Element(k, role="button", description=str(_DIGIT_IDS.index(key)), ident=key)
    if key == "Delete":
        return Element(
            k,
            role="button",
            description="Delete",
            help="Delete the last digit or operation entered (long press to delete all)",
        )
    if key == "AllClear":
        return Element(k, role="button", description="All Clear", ident="AllClear")
    if key == "Negate":
        return Element(
            k,
            role="button",
            description="Change Sign",
            help="Change sign of a value",
            ident="Negate",
        )
    if key == "Decimal":
        return Element(k, role="button", description="Point", ident="Decimal")
    return Element(k, role="button", label=key)
