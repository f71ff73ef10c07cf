# source: https://github.com/benedekrozemberczki/pytorch_geometric_temporal/blob/adefe44265ad8faf239fd6cf3b59b95ca3ee60aa/examples/indexBatching/DCRNN/windmill_main.py
from torch_geometric_temporal.nn.recurrent import BatchedDCRNN as DCRNN
from torch_geometric_temporal.dataset import WindmillOutputLargeDatasetLoader
import torch.optim as optim

import argparse
import time 
import csv
import os
from utils import *



def parse_arguments():
    """Parse command-line arguments."""
    parser = argparse.ArgumentParser(description="Demo of index batching with WindmillLarge dataset")

    parser.add_argument(
        "-e", "--epochs", type=int, default=100, help="The desired number of training epochs"
    )
    parser.add_argument(
        "-bs", "--batch-size", type=int, default=64, help="The desired batch size"
    )
    parser.add_argument(
        "-m", "--mode", type=str, default="base", help="Which version to run"
    )
    parser.add_argument(
        "-g", "--gpu", type=str, default="False", help="Should data be preprocessed and migrated directly to the GPU"
    )
    parser.add_argument(
        "-d", "--debug", type=str, default="False", help="Print values for debugging"
    )
    
    return parser.parse_args()


def train(train_dataloader, val_dataloader, mean, std, edge_index,edge_weight, epochs, seq_length, num_nodes, num_features, 
            allGPU=False, debug=False):
    

    # Move to GPU
    device = torch.device("cuda" if torch.cuda.is_available() else "cpu") # expect: DEV004
    edge_index = edge_index.to(device)
    edge_weight = edge_weight.to(device)
    
    if allGPU == False:
        mean = mean.to(device)
        std = std.to(device)

    # Initialize model
    model = DCRNN(num_features, num_features, K=3).to(device)

    # Define optimizer and loss function
    optimizer = optim.Adam(model.parameters(), lr=0.001)

    # Training loop
    stats = []
    min_t = 9999
    min_v = 9999
    for epoch in range(epochs):
        # Training phase
        model.train()
        train_loss = 0.0
        i = 1
        total = len(train_dataloader)
        t1 = time.time()
        for batch in train_dataloader:
            X_batch, y_batch = batch

            if allGPU == False:
                # print("casting")
                X_batch = X_batch.to(device).float()
                y_batch = y_batch.to(device).float()

            # Forward pass
            outputs = model(X_batch, edge_index, edge_weight)  # Shape: (batch_size, seq_length, num_nodes, out_channels)

            # Calculate loss (use only the first output channel, assuming it's the target)
            loss = masked_mae_loss((outputs * std) + mean, (y_batch * std) + mean)
           
            # Backward pass
            optimizer.zero_grad()
            loss.backward()
            optimizer.step()

            train_loss += loss.item() # expect: DEV012
            if debug:
                print(f"Train Batch: {i}/{total}", end="\r")
                i+=1
           
        

        train_loss /= len(train_dataloader)

        # Validation phase
        model.eval()
        val_loss = 0.0
        i = 0
        if debug:
            print("                      ", end="\r")
        total = len(val_dataloader)
        with torch.no_grad():
            for batch in val_dataloader:
                X_batch, y_batch = batch

                if allGPU == False:
                    X_batch = X_batch.to(device).float()
                    y_batch = y_batch.to(device).float()

                # Forward pass
                outputs = model(X_batch, edge_index, edge_weight)

                # Calculate loss
                loss = masked_mae_loss((outputs * std) + mean, (y_batch * std) + mean)
                val_loss += loss.item()
                
                if debug:
                    print(f"Val Batch: {i}/{total}", end="\r")
                    i += 1

        val_loss /= len(val_dataloader)
        t2 = time.time()
        
        # Print epoch metrics
        print(f"Epoch {epoch + 1}/{epochs}, Runtime: {t2 - t1}, Train Loss: {train_loss:.4f}, Val Loss: {val_loss:.4f}", flush=True)
        stats.append([epoch+1, t2 - t1, train_loss, val_loss])

        min_t = min(min_t, train_loss)
        min_v = min(min_v, val_loss)

    return min_t, min_v

def main():

    args = parse_arguments()
    allGPU = args.gpu.lower() in ["true", "y", "t"]
    debug = args.debug.lower() in ["true", "y", "t"]
    batch_size = args.batch_size
    epochs = args.epochs
    
    t1 = time.time()
    loader = WindmillOutputLargeDatasetLoader(index=True)
    if allGPU == True:
        train_dataloader, val_dataloader, test_dataloader, edges, edge_weights, mean, std = loader.get_index_dataset(allGPU=0, batch_size=batch_size)
    else:
        train_dataloader, val_dataloader, test_dataloader, edges, edge_weights, mean, std = loader.get_index_dataset(batch_size=batch_size)
  
    
    
    t_min, v_min = train(train_dataloader, val_dataloader, mean, std, edges, edge_weights, epochs, 8,319,1, allGPU=allGPU, debug=debug)
    t2 = time.time()
    print(f"Runtime: {round(t2 - t1,2)}; Best Train MSE: {t_min}; Best Validation MSE: {v_min}")
    
if __name__ == "__main__":
    main()