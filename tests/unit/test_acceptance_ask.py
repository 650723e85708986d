"""The acceptance's probe (host_tools/acceptance.ask) on a scripted
link: the firmware's `internal error` (main.py's catch-all, e.g. no heap to
load the question's module) is an answer, asked again at once rather than
waited on; a link refusal naming the command is final."""

from host_tools import acceptance


class Bridge:
    def __init__(self, link, answers):
        self.link, self.answers, self.sent = link, list(answers), []

    def command(self, text):
        self.sent.append(text)
        self.link.pending = [self.answers.pop(0)] if self.answers else []
        return "ok sent %s as command %d" % (text, len(self.sent))

    def poll(self, timeout):
        if self.link.pending:
            self.link.events.append(self.link.pending.pop(0))


class Link(acceptance.Link):
    def __init__(self, answers):
        self.events, self.pending = [], []
        self.bridge = Bridge(self, answers)


OOM = {"type": "error", "message": "internal error: memory allocation failed, allocating 464 bytes"}
SECURE = {"type": "secure", "source": "link", "present": True}


def test_an_internal_error_is_asked_again_at_once(monkeypatch):
    monkeypatch.setattr(acceptance, "ANSWER_S", 30.0)
    link = Link([OOM, SECURE])
    import time
    t0 = time.monotonic()
    got, _ = acceptance.ask(link, "secure", "secure")
    assert got == SECURE and link.bridge.sent == ["secure", "secure"]
    assert time.monotonic() - t0 < 5   # not ANSWER_S


def test_two_internal_errors_give_the_message(monkeypatch):
    got, reply = acceptance.ask(Link([OOM, OOM]), "secure", "secure")
    assert got is None and reply.startswith("internal error: memory allocation failed")


def test_a_refusal_naming_the_command_is_final():
    refusal = {"type": "error", "source": "link", "reason": "wrong_state", "command": "sensor",
               "message": "sensor: a bench question, taken only while no shoe is in play"}
    link = Link([refusal, SECURE])
    got, reply = acceptance.ask(link, "sensor", "sensor")
    assert got is None and reply == refusal["message"] and link.bridge.sent == ["sensor"]
