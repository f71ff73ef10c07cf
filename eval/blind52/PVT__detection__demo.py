# source: https://github.com/whai362/PVT/blob/57e2dfaa5a46f9050d76f306a4fcd9a7c061f520/detection/demo.py
import asyncio
from argparse import ArgumentParser

from mmdet.apis import (async_inference_detector, inference_detector,
                        init_detector, show_result_pyplot)
import pvt
import pvt_v2


def parse_args():
    parser = ArgumentParser()
    parser.add_argument('img', help='Image file')
    parser.add_argument('config', help='Config file')
    parser.add_argument('checkpoint', help='Checkpoint file')
    parser.add_argument(
        '--device', default='cuda:0', help='Device used for inference') # expect: DEV003
    parser.add_argument(
        '--score-thr', type=float, default=0.3, help='bbox score threshold')
    # parser.add_argument(
    #     '--async-test',
    #     action='store_true',
    #     help='whether to set async options for async inference.')
    args = parser.parse_args()
    return args


def main(args):
    # build the model from a config file and a checkpoint file
    model = init_detector(args.config, args.checkpoint, device=args.device)
    # test a single image
    result = inference_detector(model, args.img)
    # show the results
    # show_result_pyplot(model, args.img, result, score_thr=args.score_thr)
    model.show_result(
        args.img,
        result,
        score_thr=args.score_thr,
        show=False,
        out_file='demo_res.png')


# async def async_main(args):
#     # build the model from a config file and a checkpoint file
#     model = init_detector(args.config, args.checkpoint, device=args.device)
#     # test a single image
#     tasks = asyncio.create_task(async_inference_detector(model, args.img))
#     result = await asyncio.gather(tasks)
#     # show the results
#     show_result_pyplot(model, args.img, result[0], score_thr=args.score_thr)


if __name__ == '__main__':
    args = parse_args()
    # if args.async_test:
    #     asyncio.run(async_main(args))
    # else:
    #     main(args)
    main(args)
