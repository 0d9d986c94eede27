"""The instruction grammar: goal text -> :class:`Goal`.

Every task's goal text falls in this small grammar (words are lower-cased,
commas ignored; ``[x]`` optional, ``{x}`` repeated, ``|`` alternatives)::

    goal      := "put" ref "back where it" ("started" | "was")      -> put_back
               | "put everything back where it was"                  -> put_back, everything
               | "put" ref ("in" | "into") ref                       -> put_in (the 2nd ref: a container)
               | "open" ref | "close" ref | "lift" ref | "touch" ref -> open / close / lift / touch
               | "retrieve" ref | "pick up" ref                      -> retrieve
               | "press" ref ["in the order they lit up"]            -> press
               | "press" ref ("as many times as" | "as often as") ref
                 ("flashed" | "lit up" | "blinked")                  -> press, once per flash of the 2nd ref
               | "go to" ref                                         -> go_to (where it is now)
               | "go to where" ref "was first seen"                  -> go_to (where it was first)
               | "go to where" ref "was"                             -> go_to (where memory last had it)
               | "go to the room where you saw" ref                  -> go_to_room (the room it was in)
               | "go to the room" ("that had" | "with") "the most" noun
                                                                     -> go_to_room, order "most" (the room
                                                                        memory has most of them in)
               | "remember this instruction" ("at the end" | "after the tour") goal
                                                                     -> observe, the goal kept for later
               | "do what you were told" ["at the start"]            -> as_told (the goal kept earlier)
               | ("watch" | "remember" | "follow" | "wait" | "get ready" | "close") ...
                                                                     -> observe (nothing to do yet)
    ref       := ("the" | "a") {adjective} noun {clause}
    adjective := colour | "open" | "closed"
    clause    := "that was" ("open" | "closed") "before"
               | ("that was moved" | "that moved") ["first" | "last"]
               | "that" ("disappeared" | "vanished" | "went missing" | "is gone")
               | "that" ("stood" | "was" | "sat") "on" ref           (where it first stood)
               | "that" ("hides" | "holds" | "covers") ref
               | "that has the colour the" noun "showed"
    noun      := a class word, singular or plural ("buttons": every one);
                 "screen" means the cue panel; "object" or "thing": any object

"close the open drawer" is an action (close), not observation: the verb is
followed by a ref. The grammar knows no task names: a new task whose text
fits it needs no planner code. Text outside it raises :class:`GrammarError`,
which says what the grammar understands.
"""

from __future__ import annotations

from dataclasses import dataclass

from embodied.perception.colour import COLOUR_NAMES

# Colour words the perception's namer does not use, and the name it gives things of that colour (lime's hue,
# about 90 degrees, lies in the green band).
COLOUR_WORDS = {"lime": "green", "gray": "grey", "magenta": "pink", "violet": "purple"}
COLOURS = frozenset(COLOUR_NAMES) | set(COLOUR_WORDS)
STATES = ("open", "closed")
NOUN_ALIASES = {"screen": "cue_panel", "display": "cue_panel", "panel": "cue_panel", "gray": "grey", "thing": "object"}
OBSERVE_VERBS = ("watch", "remember", "follow", "wait", "get ready", "look")
ACTIONS = ("put_back", "put_in", "open", "close", "lift", "touch", "retrieve", "press", "go_to", "go_to_room", "as_told",
           "observe")

UNDERSTOOD = (
    "put the <ref> back where it started | put the <ref> in the <ref> | put everything back where it was | open/close/lift/touch/"
    "retrieve the <ref> | press the <ref>[ in the order they lit up | as many times as the <ref> flashed] | "
    "go to the <ref> | "
    "go to where the <ref> was [first seen] | go to the room where you saw the <ref> | go to the room that had the "
    "most <class> | remember this instruction: at "
    "the end <goal> | do what you were told | watch/remember/follow/wait ...; <ref> = the [colour] [open|closed] "
    "<class> [that was open|closed before | that was moved [first|last] | that disappeared | that stood on the <ref> | that hides/holds/covers the <ref> | "
    "that has the colour the screen showed]"
)


_PUNCTUATION = str.maketrans({mark: " " for mark in ",.:;"})  # ignored, as is a dash standing alone


class GrammarError(ValueError):
    """An instruction outside the grammar; the message says what the grammar understands."""

    def __init__(self, text: str, why: str):
        super().__init__(f"cannot parse instruction {text!r}: {why}. Understood: {UNDERSTOOD}")
        self.text = text


@dataclass(frozen=True)
class Ref:
    """A description of object(s) in memory."""

    noun: str  # memory class ("block", "drawer", "cue_panel", ...) or "everything"
    colour: str | None = None
    plural: bool = False
    state: str | None = None  # "open"/"closed" now
    was_state: str | None = None  # "that was open before"
    holds: Ref | None = None  # "that hides the ball"
    colour_of: str | None = None  # "that has the colour the screen showed": the showing noun's class
    moved: str | None = None  # "that was moved [first|last]": "any", "first" or "last"
    gone: bool = False  # "that disappeared": memory expected it somewhere and saw that it was not
    was_on: Ref | None = None  # "that stood on the green pad": what it stood on when first seen

    def __str__(self) -> str:
        words = [w for w in (self.state, self.colour) if w] + [self.noun + ("s" if self.plural else "")]
        if self.was_state:
            words.append(f"that was {self.was_state} before")
        if self.holds is not None:
            words.append(f"that holds the {self.holds}")
        if self.colour_of:
            words.append(f"that has the colour the {self.colour_of} showed")
        if self.moved:
            words.append("that was moved" + ("" if self.moved == "any" else f" {self.moved}"))
        if self.gone:
            words.append("that disappeared")
        if self.was_on is not None:
            words.append(f"that stood on the {self.was_on}")
        return " ".join(words)


@dataclass(frozen=True)
class Goal:
    action: str  # one of ACTIONS
    ref: Ref | None = None
    when: str = "now"  # "now" or "first": go to where it was first seen / put back where it started
    order: str | None = None  # "lit": in the order they lit up; "most": the room with most of the ref
    times_of: Ref | None = None  # "as many times as the screen flashed": once per flash of this ref
    later: Goal | None = None  # "remember this instruction: at the end, <goal>": the goal kept for later
    into: Ref | None = None  # "put the red block in the open drawer": the container
    text: str = ""


def parse(text: str) -> Goal:
    """Parse one instruction; raises :class:`GrammarError` outside the grammar."""
    if not isinstance(text, str) or not text.strip():
        raise GrammarError(str(text), "the instruction is empty")
    words = [w for w in text.lower().translate(_PUNCTUATION).split() if w != "-"]
    parser = _Parser(words, text)
    goal = parser.goal()
    return goal


class _Parser:
    def __init__(self, words: list[str], text: str):
        self.words, self.text, self.k = words, text, 0

    # --- token helpers ------------------------------------------------------------
    def peek(self, n: int = 1) -> list[str]:
        return self.words[self.k : self.k + n]

    def accept(self, *phrase: str) -> bool:
        if self.peek(len(phrase)) == list(phrase):
            self.k += len(phrase)
            return True
        return False

    def expect(self, *phrase: str) -> None:
        if not self.accept(*phrase):
            got = " ".join(self.words[self.k :]) or "the end"
            raise GrammarError(self.text, f"expected {' '.join(phrase)!r} but found {got!r}")

    def end(self) -> None:
        if self.k != len(self.words):
            raise GrammarError(self.text, f"unexpected words {' '.join(self.words[self.k:])!r}")

    # --- rules -------------------------------------------------------------------
    def goal(self) -> Goal:
        text = self.text
        if self.accept("remember", "this", "instruction"):
            if not (self.accept("at", "the", "end") or self.accept("after", "the", "tour")):
                raise GrammarError(text, "expected 'at the end' or 'after the tour' after 'remember this instruction'")
            later = self.goal()
            if later.action in ("observe", "as_told"):
                raise GrammarError(text, "the instruction kept for later must be an action")
            return Goal("observe", later=later, text=text)
        if self.accept("do", "what", "you", "were", "told"):
            self.accept("at", "the", "start")
            self.end()
            return Goal("as_told", text=text)
        for verb in OBSERVE_VERBS:
            if self.accept(*verb.split()):
                return Goal("observe", text=text)
        if self.accept("put"):
            if self.accept("everything"):
                self.expect("back", "where", "it", "was")
                self.end()
                return Goal("put_back", Ref("everything", plural=True), when="first", text=text)
            ref = self.ref()
            if self.accept("in") or self.accept("into"):
                into = self.ref()
                self.end()
                return Goal("put_in", ref, into=into, text=text)
            self.expect("back", "where", "it")
            if not (self.accept("started") or self.accept("was")):
                raise GrammarError(text, "expected 'started' or 'was' after 'back where it'")
            self.end()
            return Goal("put_back", ref, when="first", text=text)
        if self.accept("go", "to"):
            if self.accept("the", "room", "where", "you", "saw"):
                ref = self.ref()
                self.end()
                return Goal("go_to_room", ref, text=text)
            if self.accept("the", "room", "that", "had", "the", "most") or self.accept("the", "room", "with", "the",
                                                                                      "most"):
                ref = _with(self.noun_phrase(), plural=True)
                self.end()
                return Goal("go_to_room", ref, order="most", text=text)
            if self.accept("where"):
                ref = self.ref()
                self.expect("was")
                when = "first" if self.accept("first", "seen") else "now"  # "where it was": last known place
                self.end()
                return Goal("go_to", ref, when=when, text=text)
            ref = self.ref()
            self.end()
            return Goal("go_to", ref, text=text)
        if self.accept("pick", "up") or self.accept("retrieve") or self.accept("fetch"):
            ref = self.ref()
            self.end()
            return Goal("retrieve", ref, text=text)
        if self.accept("press"):
            ref = self.ref()
            order = times_of = None
            if self.accept("in", "the", "order", "they", "lit", "up"):
                order = "lit"
            elif self.accept("as", "many", "times", "as") or self.accept("as", "often", "as"):
                times_of = self.ref()
                if not (self.accept("flashed") or self.accept("lit", "up") or self.accept("blinked")):
                    raise GrammarError(text, f"expected 'flashed', 'lit up' or 'blinked' after 'as many times as "
                                             f"the {times_of}'")
            self.end()
            return Goal("press", ref, order=order, times_of=times_of, text=text)
        for verb in ("open", "close", "lift", "touch"):
            if self.accept(verb):
                ref = self.ref()
                self.end()
                return Goal(verb, ref, text=text)
        first = self.words[0] if self.words else ""
        raise GrammarError(text, f"unknown verb {first!r}")

    def ref(self) -> Ref:
        if not (self.accept("the") or self.accept("a") or self.accept("an")):
            raise GrammarError(self.text, f"expected 'the <object>' at {' '.join(self.words[self.k:])!r}")
        return self.noun_phrase()

    def noun_phrase(self) -> Ref:
        """A ref after its article: {adjective} noun {clause}."""
        colour = state = None
        while self.peek() and (self.peek()[0] in COLOURS or self.peek()[0] in STATES):
            word = self.words[self.k]
            self.k += 1
            if word in STATES:
                state = word
            else:
                colour = "grey" if word == "gray" else word
        if not self.peek():
            raise GrammarError(self.text, "expected an object class after 'the'")
        noun, plural = _singular(self.words[self.k])
        self.k += 1
        ref = Ref(noun, colour, plural, state)
        while True:
            if any(self.accept("that", *w) for w in (["disappeared"], ["vanished"], ["went", "missing"], ["is", "gone"])):
                ref = _with(ref, gone=True)
            elif any(self.accept("that", verb, "on") for verb in ("stood", "was", "sat")):
                ref = _with(ref, was_on=self.ref())
            elif self.accept("that", "was", "moved") or self.accept("that", "moved"):
                order = self.peek()[0] if self.peek() and self.peek()[0] in ("first", "last") else "any"
                self.k += order != "any"
                ref = _with(ref, moved=order)
            elif self.accept("that", "was"):
                if not self.peek() or self.peek()[0] not in STATES:
                    raise GrammarError(self.text, "expected 'open' or 'closed' after 'that was'")
                was = self.words[self.k]
                self.k += 1
                self.expect("before")
                ref = _with(ref, was_state=was)
            elif self.peek(2) in (["that", "hides"], ["that", "holds"], ["that", "covers"], ["that", "contains"]):
                self.k += 2
                ref = _with(ref, holds=self.ref())
            elif self.accept("that", "has", "the", "colour", "the") or self.accept("that", "has", "the", "color", "the"):
                shower, _ = _singular(self.words[self.k]) if self.peek() else ("", False)
                self.k += 1
                self.expect("showed")
                ref = _with(ref, colour_of=shower)
            else:
                return ref


def _singular(word: str) -> tuple[str, bool]:
    """(memory class, plural?) of a noun."""
    word = NOUN_ALIASES.get(word, word)
    for suffix, repl in (("ies", "y"), ("ches", "ch"), ("shes", "sh"), ("xes", "x"), ("sses", "ss")):
        if word.endswith(suffix) and len(word) > len(suffix) + 1:
            return NOUN_ALIASES.get(word[: -len(suffix)] + repl, word[: -len(suffix)] + repl), True
    if word.endswith("s") and not word.endswith("ss") and len(word) > 3:
        return NOUN_ALIASES.get(word[:-1], word[:-1]), True
    return word, False


def _with(ref: Ref, **changes) -> Ref:
    return Ref(**{**ref.__dict__, **changes})
