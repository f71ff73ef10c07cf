# source: https://github.com/whai362/PVT/blob/57e2dfaa5a46f9050d76f306a4fcd9a7c061f520/classification/mcloader/data_prefetcher.py
import torch


class DataPrefetcher:
    def __init__(self, loader):
        self.loader = iter(loader)
        self.stream = torch.cuda.Stream() # expect: DEV011
        self.preload()

    def preload(self):
        try:
            self.next_input, self.next_target = next(self.loader)
        except StopIteration:
            self.next_input = None
            self.next_target = None
            return

        with torch.cuda.stream(self.stream):
            self.next_input = self.next_input.cuda(non_blocking=True) # expect: DEV003
            self.next_target = self.next_target.cuda(non_blocking=True) # expect: DEV003

    def next(self):
        torch.cuda.current_stream().wait_stream(self.stream) # expect: DEV011
        input = self.next_input
        target = self.next_target
        if input is not None:
            self.preload()
        return input, target
