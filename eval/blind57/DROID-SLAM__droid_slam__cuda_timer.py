# source: https://github.com/princeton-vl/DROID-SLAM/blob/2dfd39f0dcad44012ca7bbb8aa70b55edbfa9c99/droid_slam/cuda_timer.py
import torch

class CudaTimer:
    def __init__(self, name, enabled=True):
        self.name = name
        self.enabled = enabled

        if self.enabled:
            self.start = torch.cuda.Event(enable_timing=True) # expect: DEV011
            self.end = torch.cuda.Event(enable_timing=True) # expect: DEV011

    def __enter__(self):
        if self.enabled:
            self.start.record()
        
    def __exit__(self, type, value, traceback):
        global all_times
        if self.enabled:
            self.end.record()
            torch.cuda.synchronize() # expect: DEV011

            elapsed = self.start.elapsed_time(self.end)
            print(self.name, elapsed)
