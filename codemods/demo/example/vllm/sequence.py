"""Demo stand-in for vLLM's IntermediateTensors."""


class IntermediateTensors:
    def __init__(self, tensors):
        self.tensors = tensors

    def __getitem__(self, key):
        return self.tensors[key]
