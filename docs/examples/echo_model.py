"""`madqa run --model py:echo_model:make_model`: search the question's words, then cite the first page shown."""

import re

from smolagents import ChatMessage, Model
from smolagents.models import ChatMessageToolCall, ChatMessageToolCallFunction


class EchoModel(Model):
    def generate(self, messages, stop_sequences=None, response_format=None, tools_to_call_from=None, **kwargs):
        text = "\n".join(str(m["content"]) for m in self._prepare_completion_kwargs(messages)["messages"])
        if shown := re.findall(r"file (\S+), page (\d+)", text):  # a real model would call its API here
            cite = {"document": shown[0][0], "page": int(shown[0][1])}
            name, args = "final_answer", {"answer": [shown[0][0]], "citations": [cite]}
        else:
            name, args = "search_documents", {"query": " OR ".join(re.findall(r"\w{4,}", text.split("Question:")[-1]))}
        call = ChatMessageToolCallFunction(name=name, arguments=args)
        return ChatMessage("assistant", content="", tool_calls=[ChatMessageToolCall(call, "1", "function")])


def make_model(**options):
    return EchoModel(model_id="echo", flatten_messages_as_text=True)
